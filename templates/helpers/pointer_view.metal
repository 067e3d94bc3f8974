{# A buffer seen through a pointer of another element type (`ptr.to(tl.pointer_type(T))`,
   codegen/lower_pointer_view.py): the body writes `km_as<T>(buffer)` at every
   access, so each access names the buffer itself. Outputs are `device`, inputs `const device`
   (an input the kernel reads through such a view is passed in device memory, as a vector input
   is: MSLKernel.metadata "vector_inputs"). The emulator's bounds-checked build gives its own
   `km_as` for checked buffers (runtime/tm_kernel.h), which counts the buffer's bytes. #}
template <typename U, typename T>
inline device U* km_as(device T* p) { return reinterpret_cast<device U*>(p); }
template <typename U, typename T>
inline const device U* km_as(const device T* p) { return reinterpret_cast<const device U*>(p); }
