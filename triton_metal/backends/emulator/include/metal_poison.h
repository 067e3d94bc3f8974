// metal_poison.h - make names MSL lacks unusable in the rest of the file.
//
// Contract: included after every header and before the kernel's text (the
// metal_stdlib header includes it last unless TM_SHIM_DEFER_POISON is
// defined, in which case the runtime includes it itself just before the
// kernel). From here on `double`, `goto`, `new`/`delete`, `virtual`,
// exceptions, RTTI, `thread_local`, inline assembly, `std`, `__int128`, and
// the C library and GCC builtins a kernel could use to escape the shim are
// errors ("attempt to use poisoned ..."). Code after this point - kernel
// text and anything the runtime appends - may not use these names.
// Names that are merely undeclared (expf, printf, erf, ...) already fail in
// C++; they are poisoned too so the message says why.
#pragma once

#pragma GCC poison double goto virtual thread_local typeid dynamic_cast
#pragma GCC poison new delete throw try catch asm __asm __asm__ std __int128
#pragma GCC poison printf fprintf sprintf snprintf puts putchar
#pragma GCC poison malloc calloc realloc free alloca abort exit
#pragma GCC poison memcpy memset memmove memcmp strlen
#pragma GCC poison expf exp2f logf log2f log10f powf sqrtf fabsf floorf ceilf
#pragma GCC poison roundf truncf fmodf fminf fmaxf fmaf sinf cosf tanf
#pragma GCC poison asinf acosf atanf atan2f sinhf coshf tanhf
#pragma GCC poison erf erff erfc erfcf expm1 expm1f cbrt cbrtf lgamma tgamma
#pragma GCC poison __builtin_printf __builtin_puts __builtin_malloc __builtin_free
#pragma GCC poison __builtin_alloca __builtin_abort __builtin_exit __builtin_trap
#pragma GCC poison __builtin_memcpy __builtin_memset __builtin_memmove
#pragma GCC poison __builtin_exp __builtin_expf __builtin_exp2f __builtin_log
#pragma GCC poison __builtin_logf __builtin_log2f __builtin_pow __builtin_powf
#pragma GCC poison __builtin_sqrt __builtin_sqrtf __builtin_sin __builtin_sinf
#pragma GCC poison __builtin_cos __builtin_cosf __builtin_tanhf __builtin_erff
#pragma GCC poison __builtin_fmaf __builtin_fabsf __builtin_floorf __builtin_ceilf
