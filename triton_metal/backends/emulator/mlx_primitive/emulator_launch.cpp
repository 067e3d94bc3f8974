// Lazy emulator launches on MLX arrays: an MLX primitive whose eval_cpu runs a kernel the emulator
// compiled (a shared library exporting tm_kernel_main, runtime/tm_abi.h) on MLX's CPU stream.
//
// Built on first use against the headers and libmlx that the mlx wheel ships, and against the
// nanobind that MLX's own Python module uses (same nanobind ABI and domain "mlx", so an mx.array
// passed from Python is the C++ mlx::core::array itself). See docs/runtime.md, "MLX on Linux".
//
// A launch is described by Python (backends/emulator/lazy_mlx.py) as the kernel library's path,
// the dispatch sizes and one slot per [[buffer(i)]]: an input, an output, or constant bytes (the
// shape, strides and ndim buffers MLX's metal_kernel adds). Outputs are allocated by MLX when the
// graph is evaluated, filled with the byte pattern of one element (the emulator's stand-in for
// MLX's uninitialised memory, or init_value), then the kernel runs with the buffers' addresses.

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "mlx/backend/cpu/encoder.h"
#include "mlx/mlx.h"
#include "mlx/primitives.h"

#include "tm_abi.h"

namespace nb = nanobind;
namespace mx = mlx::core;

namespace {

using KernelEntry = int (*)(tm_launch_desc*);

// A kernel library, loaded once and never unloaded: the runtime library it links keeps worker
// threads alive between launches, which must not outlive its code (ctypes never unloads either).
struct KernelLibrary {
  KernelEntry main = nullptr;
  KernelEntry wait = nullptr;
};

KernelLibrary open_library(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    throw std::runtime_error("cannot load the emulator kernel " + path + ": " + dlerror());
  }
  KernelLibrary lib;
  lib.main = reinterpret_cast<KernelEntry>(dlsym(handle, "tm_kernel_main"));
  lib.wait = reinterpret_cast<KernelEntry>(dlsym(handle, "tm_launch_wait"));
  if (lib.main == nullptr || lib.wait == nullptr) {
    throw std::runtime_error("the emulator kernel " + path + " lacks tm_kernel_main");
  }
  return lib;  // the handle stays open for the process (RTLD_NODELETE as well)
}

// The library at `path`, opened on its first launch.
KernelLibrary load_library(const std::string& path) {
  static std::mutex guard;
  static std::unordered_map<std::string, KernelLibrary> loaded;
  std::lock_guard<std::mutex> lock(guard);
  auto found = loaded.find(path);
  if (found == loaded.end()) {
    found = loaded.emplace(path, open_library(path)).first;
  }
  return found->second;
}

// A fault the kernel ran into (bounds checks, the watchdog, a barrier error) is thrown on MLX's
// stream, and MLX re-raises it at the evaluation as a std::runtime_error holding its text only.
// So the text starts with a tag naming the kernel (lazy_mlx's token) and the runtime's status,
// which the translator registered below reads back to raise the exception the eager launch
// raises (lazy_mlx.fault: the Python names, KernelFault, OutOfBoundsAccess, ...).
constexpr const char* kFaultTag = "[EmulatorKernel fault ";

std::string fault_text(long token, int status, const std::string& message) {
  return std::string(kFaultTag) + std::to_string(token) + " " + std::to_string(status) + "] " + message;
}

enum SlotKind : int { kInput = 0, kOutput = 1, kConstant = 2 };

// Everything one launch needs besides its arrays; shared by the primitive and the task it queues.
struct LaunchSpec {
  std::string kernel_name;              // the MSL kernel's name (the runtime's messages)
  std::string label;                     // metal_kernel's name (the refusals of derivatives)
  long token = 0;                        // lazy_mlx's key for the kernel's fault describer
  std::string library_path;
  KernelLibrary library;
  std::vector<int> slot_kinds;           // per [[buffer(i)]]: SlotKind
  std::vector<int> slot_index;           // input or output index, or index into constants
  std::vector<std::string> constants;    // bytes of the constant buffers
  std::vector<long> constant_counts;     // their element counts (bounds-checked builds)
  std::vector<std::string> fills;        // per output: the bytes of one element to fill it with
  std::vector<unsigned> grid;            // threads per grid, after dispatch_dims
  std::vector<unsigned> threadgroup;
  bool checked = false;                  // bounds checks: element counts follow the pointers
  double watchdog_seconds = 30.0;
  unsigned workers = 0;
  unsigned stack_bytes = 128 * 1024;

  bool same_as(const LaunchSpec& o) const {
    return kernel_name == o.kernel_name && library_path == o.library_path &&
        slot_kinds == o.slot_kinds && slot_index == o.slot_index && constants == o.constants &&
        fills == o.fills && grid == o.grid && threadgroup == o.threadgroup &&
        checked == o.checked;
  }
};

void fill(char* bytes, size_t n, const std::string& pattern) {
  size_t k = pattern.size();
  for (size_t at = 0; k != 0 && at + k <= n; at += k) {
    std::memcpy(bytes + at, pattern.data(), k);
  }
}

// Kernels are compiled for buffers aligned as Metal aligns them (vector loads and stores of up to
// 16 bytes), while MLX's CPU allocator only guarantees 8 bytes and a view may start anywhere: the
// emulator gives every buffer this alignment, copying inputs that lack it and running outputs
// that lack it on an aligned buffer copied back after the launch.
constexpr size_t kAlignment = 64;

struct AlignedBytes {
  std::unique_ptr<char, decltype(&std::free)> data{nullptr, &std::free};
  explicit AlignedBytes(size_t bytes)
      : data(static_cast<char*>(std::aligned_alloc(
                 kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment + kAlignment)),
             &std::free) {
    if (!data) {
      throw std::bad_alloc();
    }
  }
};

bool aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// The elements of `in` in row-major order from an aligned address: the array's own memory
// when it is row-contiguous and aligned, else a copy (a view, a broadcast, a transpose).
const void* dense_input(const mx::array& in, std::unique_ptr<AlignedBytes>& copy) {
  if (in.flags().row_contiguous && aligned(in.data<void>())) {
    return in.data<void>();
  }
  size_t item = in.itemsize();
  copy = std::make_unique<AlignedBytes>(in.size() * item);
  char* dst = copy->data.get();
  const auto* base = static_cast<const char*>(in.data<void>());
  if (in.flags().row_contiguous) {
    std::memcpy(dst, base, in.size() * item);
    return dst;
  }
  int nd = static_cast<int>(in.ndim());
  std::vector<int64_t> at(nd, 0);
  for (size_t k = 0; k < in.size(); ++k) {
    int64_t offset = 0;
    for (int d = 0; d < nd; ++d) {
      offset += at[d] * in.strides()[d];
    }
    std::memcpy(dst + k * item, base + offset * static_cast<int64_t>(item), item);
    for (int d = nd - 1; d >= 0; --d) {  // the next index, last axis fastest
      if (++at[d] < in.shape(d)) {
        break;
      }
      at[d] = 0;
    }
  }
  return dst;
}

// One run of the kernel over the inputs and the outputs' (aligned) buffers.
void launch_kernel(const LaunchSpec& spec, std::vector<mx::array>& inputs,
                   std::vector<mx::array>& outputs, const std::vector<char*>& out_data) {
  std::vector<std::unique_ptr<AlignedBytes>> copies(inputs.size());
  std::vector<const void*> dense(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    dense[i] = dense_input(inputs[i], copies[i]);
  }
  std::vector<std::unique_ptr<AlignedBytes>> constants;
  for (const auto& c : spec.constants) {
    constants.push_back(std::make_unique<AlignedBytes>(c.size()));
    std::memcpy(constants.back()->data.get(), c.data(), c.size());
  }
  size_t n = spec.slot_kinds.size();
  std::vector<void*> pointers(spec.checked ? 2 * n : n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    int at = spec.slot_index[i];
    long count = 0;
    switch (spec.slot_kinds[i]) {
      case kInput:
        pointers[i] = const_cast<void*>(dense[at]);
        count = static_cast<long>(inputs[at].size());
        break;
      case kOutput:
        pointers[i] = out_data[at];
        count = static_cast<long>(outputs[at].size());
        break;
      default:
        pointers[i] = constants[at]->data.get();
        count = spec.constant_counts[at];
    }
    if (spec.checked) {
      pointers[n + i] = reinterpret_cast<void*>(count);
    }
  }
  std::vector<char> error(8192, 0);
  tm_launch_desc desc{};
  desc.kernel_name = spec.kernel_name.c_str();
  desc.buffers = pointers.data();
  for (int d = 0; d < 3; ++d) {
    desc.grid[d] = spec.grid[d];
    desc.tpt[d] = spec.threadgroup[d];
  }
  desc.watchdog_seconds = spec.watchdog_seconds;
  desc.workers = spec.workers;
  desc.stack_bytes = spec.stack_bytes;
  desc.error = error.data();
  desc.error_capacity = static_cast<unsigned>(error.size());
  desc.poll_seconds = 0.0;  // wait here: nothing on this thread could interrupt the launch
  int status = spec.library.main(&desc);
  while (status == TM_PENDING) {
    status = spec.library.wait(&desc);
  }
  if (status != TM_OK) {
    throw std::runtime_error(fault_text(spec.token, status, std::string(error.data())));
  }
}

// Runs the kernel on buffers that are ready (called on the CPU stream's thread).
void run(const LaunchSpec& spec, std::vector<mx::array>& inputs, std::vector<mx::array>& outputs) {
  std::vector<std::unique_ptr<AlignedBytes>> scratch(outputs.size());
  std::vector<char*> out_data(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    out_data[i] = static_cast<char*>(outputs[i].data<void>());
    if (!aligned(out_data[i])) {
      scratch[i] = std::make_unique<AlignedBytes>(outputs[i].nbytes());
      out_data[i] = scratch[i]->data.get();
    }
    fill(out_data[i], outputs[i].nbytes(), spec.fills[i]);
  }
  if (spec.grid[0] != 0 && spec.grid[1] != 0 && spec.grid[2] != 0) {  // else nothing runs
    try {
      launch_kernel(spec, inputs, outputs, out_data);
    } catch (...) {
      // MLX counts the outputs as evaluated even when their evaluation raised: give them all
      // bits set (NaN, -1), never what the faulting kernel half wrote or uninitialised memory
      for (auto& out : outputs) {
        std::memset(out.data<void>(), 0xFF, out.nbytes());
      }
      throw;
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (scratch[i]) {
      std::memcpy(outputs[i].data<void>(), out_data[i], outputs[i].nbytes());
    }
  }
}

class EmulatorKernel : public mx::Primitive {
 public:
  EmulatorKernel(mx::Stream stream, std::shared_ptr<LaunchSpec> spec)
      : mx::Primitive(stream), spec_(std::move(spec)) {}

  void eval_cpu(const std::vector<mx::array>& inputs, std::vector<mx::array>& outputs) override {
    for (auto& out : outputs) {
      out.set_data(mx::allocator::malloc(out.nbytes()));
    }
    auto& encoder = mx::cpu::get_command_encoder(stream());
    for (const auto& in : inputs) {
      encoder.set_input_array(in);
    }
    for (auto& out : outputs) {
      encoder.set_output_array(out);
    }
    // The arrays are captured by value: they hold their buffers until the task has run.
    encoder.dispatch([spec = spec_, ins = inputs, outs = outputs]() mutable {
      run(*spec, ins, outs);
    });
  }

  void eval_gpu(const std::vector<mx::array>&, std::vector<mx::array>&) override {
    throw std::runtime_error("[EmulatorKernel] kernel '" + spec_->kernel_name +
                             "' runs on the CPU stream only.");
  }

  // No derivative rules, as MLX's CustomKernel has none: the same words as its errors, naming
  // the kernel's variant (the eager stand-in, api.py, raises the same text).
  std::vector<mx::array> jvp(const std::vector<mx::array>&, const std::vector<mx::array>&,
                             const std::vector<int>&) override {
    throw std::invalid_argument(refusal("jvp"));
  }

  std::vector<mx::array> vjp(const std::vector<mx::array>&, const std::vector<mx::array>&,
                             const std::vector<int>&, const std::vector<mx::array>&) override {
    throw std::invalid_argument(refusal("vjp"));
  }

  std::pair<std::vector<mx::array>, std::vector<int>> vmap(
      const std::vector<mx::array>&, const std::vector<int>&) override {
    throw std::invalid_argument(refusal("vmap"));
  }

  const char* name() const override { return "EmulatorKernel"; }

  bool is_equivalent(const mx::Primitive& other) const override {
    const auto* o = dynamic_cast<const EmulatorKernel*>(&other);
    return o != nullptr && spec_->same_as(*o->spec_);
  }

 private:
  std::shared_ptr<LaunchSpec> spec_;

  std::string refusal(const char* rule) const {
    return std::string("[Primitive::") + rule + "] Not implemented for CustomKernel (metal_kernel '" +
        spec_->label + "').";
  }
};

std::vector<mx::array> launch(
    const std::vector<mx::array>& inputs,
    const std::vector<std::vector<int>>& output_shapes,
    const std::vector<mx::Dtype>& output_dtypes,
    const std::string& kernel_name,
    const std::string& label,
    long token,
    const std::string& library_path,
    const std::vector<int>& slot_kinds,
    const std::vector<int>& slot_index,
    const std::vector<nb::bytes>& constants,
    const std::vector<long>& constant_counts,
    const std::vector<nb::bytes>& fills,
    const std::vector<unsigned>& grid,
    const std::vector<unsigned>& threadgroup,
    bool checked,
    double watchdog_seconds,
    unsigned workers,
    unsigned stack_bytes) {
  if (grid.size() != 3 || threadgroup.size() != 3 || slot_kinds.size() != slot_index.size() ||
      output_shapes.size() != output_dtypes.size() || fills.size() != output_shapes.size() ||
      constants.size() != constant_counts.size()) {
    throw std::invalid_argument("[EmulatorKernel] inconsistent launch description");
  }
  auto spec = std::make_shared<LaunchSpec>();
  spec->kernel_name = kernel_name;
  spec->label = label;
  spec->token = token;
  spec->library_path = library_path;
  spec->library = load_library(library_path);
  spec->slot_kinds = slot_kinds;
  spec->slot_index = slot_index;
  for (const auto& c : constants) {
    spec->constants.emplace_back(c.c_str(), c.size());
  }
  spec->constant_counts = constant_counts;
  for (const auto& f : fills) {
    spec->fills.emplace_back(f.c_str(), f.size());
  }
  spec->grid = grid;
  spec->threadgroup = threadgroup;
  spec->checked = checked;
  spec->watchdog_seconds = watchdog_seconds;
  spec->workers = workers;
  spec->stack_bytes = stack_bytes;

  auto stream = mx::default_stream(mx::Device::cpu);
  std::vector<mx::Shape> shapes;
  for (const auto& s : output_shapes) {
    shapes.emplace_back(s.begin(), s.end());
  }
  return mx::array::make_arrays(
      std::move(shapes), output_dtypes, std::make_shared<EmulatorKernel>(stream, spec), inputs);
}

}  // namespace

// Raises the exception lazy_mlx.fault describes for a tagged fault (a RuntimeError with the
// runtime's message where it cannot); any other exception goes on to the next translator. Runs
// where MLX's evaluation returns to Python, with the GIL held.
void translate_fault(const std::exception_ptr& thrown, void*) {
  try {
    std::rethrow_exception(thrown);
  } catch (const std::runtime_error& error) {
    std::string text = error.what();
    size_t tag = std::strlen(kFaultTag);
    if (text.compare(0, tag, kFaultTag) != 0) {
      throw;
    }
    long token = 0;
    int status = 0;
    int used = 0;
    if (std::sscanf(text.c_str() + tag, "%ld %d] %n", &token, &status, &used) != 2 || used == 0) {
      throw;
    }
    std::string message = text.substr(tag + used);
    try {
      nb::object describe =
          nb::module_::import_("triton_metal.backends.emulator.lazy_mlx").attr("fault");
      nb::object exception = describe(token, status, message);
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr())), exception.ptr());
    } catch (const nb::python_error&) {
      PyErr_SetString(PyExc_RuntimeError, message.c_str());
    }
  }
}

NB_MODULE(_emulator_launch, m) {
  nb::module_::import_("mlx.core");  // mx.array's binding must be registered first
  nb::register_exception_translator(translate_fault);
  m.def("accepts", [](const mx::array&) { return true; },
        "Whether an mx.array crosses into this extension (MLX's nanobind ABI and domain).");
  m.def("launch", &launch,
        "Lazy outputs of one emulator kernel launch (backends/emulator/lazy_mlx.py).");
}
