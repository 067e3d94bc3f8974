// Host program for running shim test functions where ctypes cannot load them (an aarch64
// build under qemu-user, driven from x86-64 Python). Ordinary C++ with the C library: it is
// not compiled against the shim. It is linked with one test translation unit (compiled as a
// kernel is) and serves calls read from stdin:
//   request:  "<function name>\n", u64 argument count, then per argument one kind byte
//             ('B' buffer, 'I' integer) and a u64 (buffer length or integer value), followed
//             for buffers by that many bytes
//   response: i64 return value, then every buffer argument's bytes after the call.
// Test functions take only pointers and integers, which both ABIs (x86-64 System V and AAPCS64)
// pass in the same integer registers, so one six-argument call type fits them all.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef long (*entry_fn)(long, long, long, long, long, long);

static bool read_exact(void* p, size_t n) { return fread(p, 1, n, stdin) == n; }

int main() {
  char name[256];
  while (fgets(name, sizeof name, stdin)) {
    name[strcspn(name, "\n")] = 0;
    uint64_t nargs = 0;
    if (!read_exact(&nargs, 8) || nargs > 6) return 3;
    long args[6] = {0, 0, 0, 0, 0, 0};
    void* bufs[6] = {0, 0, 0, 0, 0, 0};
    uint64_t lens[6] = {0, 0, 0, 0, 0, 0};
    for (uint64_t i = 0; i < nargs; ++i) {
      char kind = 0;
      uint64_t value = 0;
      if (!read_exact(&kind, 1) || !read_exact(&value, 8)) return 3;
      if (kind == 'B') {
        lens[i] = value;
        bufs[i] = aligned_alloc(64, (value + 63) / 64 * 64 + 64);
        if (!read_exact(bufs[i], value)) return 3;
        args[i] = (long)bufs[i];
      } else {
        args[i] = (long)value;
      }
    }
    void* f = dlsym(RTLD_DEFAULT, name);
    if (f == NULL) {
      fprintf(stderr, "runner: no function %s\n", name);
      return 2;
    }
    long result = ((entry_fn)f)(args[0], args[1], args[2], args[3], args[4], args[5]);
    fwrite(&result, 8, 1, stdout);
    for (uint64_t i = 0; i < nargs; ++i) {
      if (bufs[i] != NULL) {
        fwrite(bufs[i], 1, lens[i], stdout);
        free(bufs[i]);
      }
    }
    fflush(stdout);
  }
  return 0;
}
