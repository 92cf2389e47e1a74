/* The safetensors reader checks the whole header before it reads or allocates any tensor data: a 3 GiB (sparse)
 * file whose header names an unknown dtype must be refused for its header (FR_E_FORMAT naming the dtype), at the
 * cost of the header, under an address-space limit far below the file's size. Before, the reader read the whole
 * file first and this failed with FR_E_NOMEM (or read 3 GiB). */
#include "common/check.h"
#include "io/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int main(void) {
#if defined(__SANITIZE_ADDRESS__)
    printf("SKIP: an address-space limit cannot be set under AddressSanitizer\n");
    return 77;
#endif
    char path[] = "/tmp/flashref-st-XXXXXX";
    int fd = mkstemp(path);
    if (!CHECKED(fd >= 0, "mkstemp")) return fr_test_exit("test_io_st_header_first");
    const long long data = 3LL << 30; /* 3 GiB of (sparse) tensor data */
    char hdr[256];
    int n = snprintf(hdr, sizeof hdr,
                     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                     "\"b\":{\"dtype\":\"Q7\",\"shape\":[%lld],\"data_offsets\":[8,%lld]}}",
                     data - 8, data);
    while (n % 8) hdr[n++] = ' ';
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((unsigned long long)n >> (8 * i));
    CHECK(write(fd, len8, 8) == 8 && write(fd, hdr, (size_t)n) == n && ftruncate(fd, 8 + n + data) == 0);
    close(fd);
    struct rlimit rl = {1LL << 30, 1LL << 30}; /* 1 GiB of address space: the file cannot be read whole */
    CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
    fr_safetensors st;
    fr_error err;
    memset(&err, 0, sizeof err);
    fr_status s = fr_st_read_file(path, &st, &err);
    CHECK(s == FR_E_FORMAT, "status %s: %s", fr_status_name(s), err.msg);
    CHECK(strstr(err.msg, "Q7") != NULL, "the message names the bad dtype: %s", err.msg);
    fr_st_free(&st);
    unlink(path);
    return fr_test_exit("test_io_st_header_first");
}
