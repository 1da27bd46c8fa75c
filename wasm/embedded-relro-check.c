// Drives the platformer program of wasm/PlatformerModule.swift through 100,000 events, for
// wasm/embedded-build.sh's read-only check: linked with full RELRO, a write to the tables at
// run time ends it with SIGSEGV.
#include <stdint.h>
#include <stdio.h>

int32_t platformer_reset(void);
int32_t platformer_send(int32_t kind, int32_t speed);
int32_t platformer_leaves(void);
int32_t platformer_output_count(void);

int main(void) {
    platformer_reset();
    uint64_t checksum = 0;
    for (int32_t i = 0; i < 100000; i++) {
        // Every event kind (0...11, `move` with speeds 0...9), and a reset now and then.
        int32_t status = platformer_send(i % 12, (i * 7) % 10);
        checksum = checksum * 31 + (uint32_t)status + (uint32_t)platformer_leaves() + (uint32_t)platformer_output_count();
        if (i % 997 == 0) platformer_reset();
    }
    printf("100,000 events, checksum %016llx", (unsigned long long)checksum);
    return 0;
}
