// The launcher of kernels built as standalone programs: ASan builds (ASan must be loaded before
// everything else in a process, which a running Python cannot arrange) and cross-compiled runs
// under qemu. The program reads its buffers from a file and writes them back after the launch.
//
// File layout (little-endian): "TMAB", grid[3] u32, tpt[3] u32, watchdog f64, workers u32,
// nbuffers u32, then per buffer: nbytes u64, writeback u32, the bytes. Each buffer gets its own
// exactly-sized heap block, so ASan's red zones catch accesses past either end. The output file
// holds the bytes of every writeback buffer, in order.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "tm_abi.h"

namespace {

bool read_all(FILE* f, void* p, size_t n) { return n == 0 || fread(p, 1, n, f) == n; }

}  // namespace

extern "C" int tm_standalone_main(int argc, char** argv, int (*kernel_main)(tm_launch_desc*)) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s INPUT OUTPUT\n", argv[0]);
        return 64;
    }
    FILE* in = fopen(argv[1], "rb");
    if (!in) return 65;
    char magic[4];
    tm_launch_desc d;
    memset(&d, 0, sizeof d);
    unsigned nbuf = 0;
    if (!read_all(in, magic, 4) || memcmp(magic, "TMAB", 4) != 0 || !read_all(in, d.grid, 12) ||
        !read_all(in, d.tpt, 12) || !read_all(in, &d.watchdog_seconds, 8) ||
        !read_all(in, &d.workers, 4) || !read_all(in, &nbuf, 4))
        return 65;
    std::vector<void*> buffers(nbuf);
    std::vector<unsigned long> sizes(nbuf);
    std::vector<unsigned> writeback(nbuf);
    for (unsigned i = 0; i < nbuf; ++i) {
        if (!read_all(in, &sizes[i], 8) || !read_all(in, &writeback[i], 4)) return 65;
        buffers[i] = malloc(sizes[i] ? sizes[i] : 1);
        if (!read_all(in, buffers[i], sizes[i])) return 65;
    }
    fclose(in);
    char error[8192];
    error[0] = 0;
    d.kernel_name = "kernel";
    d.buffers = buffers.data();
    d.error = error;
    d.error_capacity = sizeof error;
    int status = kernel_main(&d);
    if (status != TM_OK) {
        fprintf(stderr, "TM-RUNTIME-ERROR %d\n%s\n", status, error);
        return 10 + status;
    }
    FILE* out = fopen(argv[2], "wb");
    if (!out) return 66;
    for (unsigned i = 0; i < nbuf; ++i)
        if (writeback[i] && sizes[i]) fwrite(buffers[i], 1, sizes[i], out);
    fclose(out);
    for (void* p : buffers) free(p);
    return 0;
}
