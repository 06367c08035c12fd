# Warnings on and clean: every target of ours builds with these.
function(spmd_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
endfunction()
