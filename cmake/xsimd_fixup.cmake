# Debian 12's xsimd 8.1 package exports a target that links a library "xtl" which the package
# neither ships nor depends on (xsimd needs xtl only for xtl's complex type, which xpr does not
# use). Drop that link so consumers do not fail with "cannot find -lxtl".
if(TARGET xsimd AND NOT TARGET xtl)
  get_target_property(_xpr_xsimd_libs xsimd INTERFACE_LINK_LIBRARIES)
  if(_xpr_xsimd_libs)
    list(REMOVE_ITEM _xpr_xsimd_libs xtl)
    set_target_properties(xsimd PROPERTIES INTERFACE_LINK_LIBRARIES "${_xpr_xsimd_libs}")
  endif()
endif()
