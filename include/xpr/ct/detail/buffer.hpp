// SPDX-License-Identifier: MIT
// A lean growable array for constexpr code. std::vector works in constant evaluation too, but its
// allocator and iterator layers spend the evaluator's per-expression operation budget several
// times over; the compile-time tier's graphs grow to thousands of equations, so it uses this.
#pragma once

#include <cstddef>

namespace xpr::ct::detail {

/// A growable array of `T` (default-constructible, copyable) usable in constant evaluation.
template <class T>
class Buffer {
 public:
  constexpr Buffer() = default;
  constexpr explicit Buffer(std::size_t n, const T& fill = T{}) { resize(n, fill); }
  constexpr Buffer(const Buffer& other) { *this = other; }
  constexpr Buffer(Buffer&& other) noexcept
      : data_(other.data_), size_(other.size_), capacity_(other.capacity_) {
    other.data_ = nullptr;
    other.size_ = other.capacity_ = 0;
  }
  constexpr Buffer& operator=(const Buffer& other) {
    if (this == &other) return *this;
    size_ = 0;
    reserve(other.size_);
    for (std::size_t i = 0; i < other.size_; ++i) data_[i] = other.data_[i];
    size_ = other.size_;
    return *this;
  }
  constexpr Buffer& operator=(Buffer&& other) noexcept {
    if (this == &other) return *this;
    delete[] data_;
    data_ = other.data_;
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.data_ = nullptr;
    other.size_ = other.capacity_ = 0;
    return *this;
  }
  constexpr ~Buffer() { delete[] data_; }

  constexpr std::size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T& operator[](std::size_t i) { return data_[i]; }
  constexpr const T& operator[](std::size_t i) const { return data_[i]; }
  constexpr T& back() { return data_[size_ - 1]; }
  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }

  constexpr void reserve(std::size_t n) {
    if (n <= capacity_) return;
    // Value-initialised, so every element is readable in constant evaluation.
    T* fresh = new T[n]();
    for (std::size_t i = 0; i < size_; ++i) fresh[i] = static_cast<T&&>(data_[i]);
    delete[] data_;
    data_ = fresh;
    capacity_ = n;
  }
  constexpr void push_back(const T& x) {
    if (size_ == capacity_) reserve(capacity_ < 8 ? 16 : 2 * capacity_);
    data_[size_++] = x;
  }
  constexpr void pop_back() { --size_; }
  constexpr void resize(std::size_t n, const T& fill = T{}) {
    reserve(n);
    for (std::size_t i = size_; i < n; ++i) data_[i] = fill;
    size_ = n;
  }
  constexpr void clear() { size_ = 0; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace xpr::ct::detail
