/*
 * bs_pattern.c — the deterministic content of benchmark files.
 *
 * Byte o of the file with seed s is byte (o % 8) (little-endian) of
 * mix(s, o / 8): any byte can be computed from its offset alone, so received
 * bytes are checked without keeping the file in memory, and two offsets of
 * one file (or one offset of two files) almost never look alike — a response
 * from the wrong place or the wrong file fails the check.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchsupport.h"

/* splitmix64's finaliser: cheap and well mixed. */
static inline uint64_t mix(uint64_t seed, uint64_t word)
{
    uint64_t z = word * 0x9E3779B97F4A7C15ull + seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint8_t byte_at(uint64_t seed, uint64_t offset)
{
    return (uint8_t)(mix(seed, offset >> 3) >> ((offset & 7) * 8));
}

void bs_pattern_fill(uint64_t seed, uint64_t offset, void *buf, size_t len)
{
    uint8_t *p = buf;
    size_t i = 0;
    while (i < len && ((offset + i) & 7) != 0) {
        p[i] = byte_at(seed, offset + i);
        i++;
    }
    for (; i + 8 <= len; i += 8) {
        uint64_t v = mix(seed, (offset + i) >> 3);
        memcpy(p + i, &v, 8); /* x86-64 and arm64 Linux are little-endian */
    }
    for (; i < len; i++)
        p[i] = byte_at(seed, offset + i);
}

int64_t bs_pattern_check(uint64_t seed, uint64_t offset, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    size_t i = 0;
    while (i < len && ((offset + i) & 7) != 0) {
        if (p[i] != byte_at(seed, offset + i))
            return (int64_t)i;
        i++;
    }
    for (; i + 8 <= len; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        if (v != mix(seed, (offset + i) >> 3))
            break; /* the byte loop below finds which */
    }
    for (; i < len; i++) {
        if (p[i] != byte_at(seed, offset + i))
            return (int64_t)i;
    }
    return -1;
}

int bs_pattern_write_file(const char *path, uint64_t seed, uint64_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    enum { CHUNK = 1 << 20 };
    uint8_t *buf = malloc(CHUNK);
    if (buf == NULL) {
        close(fd);
        return -ENOMEM;
    }
    int r = 0;
    for (uint64_t off = 0; off < size && r == 0;) {
        size_t n = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
        bs_pattern_fill(seed, off, buf, n);
        size_t done = 0;
        while (done < n) {
            ssize_t w = write(fd, buf + done, n - done);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                r = -errno;
                break;
            }
            done += (size_t)w;
        }
        off += n;
    }
    free(buf);
    /* On disk before any measurement starts: otherwise the writeback of a
     * fresh 100 MiB fixture competes with the servers' own file writes (a
     * cache miss creates a file, and ext4 makes it wait for the journal). */
    if (r == 0 && fdatasync(fd) < 0)
        r = -errno;
    if (close(fd) < 0 && r == 0)
        r = -errno;
    return r;
}
