/* Reads AES-128 encrypted resources as plaintext through hc_reader with
 * hc_set_decryption: a CTR one (whole, then an unaligned range) and an ECB
 * one (no padding); then the CTR one while the callback refuses it (the read
 * fails with HC_EINVAL, no cached byte is lost) and again once it accepts.
 * URLs ending in ".ctr" (before any query) are CTR, ".ecb" ECB, others plain.
 * usage: decrypt CACHE_DIR CTR_URL ECB_URL PLAIN_FILE KEY_HEX IV_HEX */
#include <httpcache.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t the_key[16], the_iv[16];
static atomic_int refuse = 0;
static atomic_int calls = 0;
static const char *ctr_url;
static atomic_int ctr_url_exact = 1;

static int parse_hex(const char *hex, uint8_t out[16])
{
    if (strlen(hex) != 32)
        return -1;
    for (int i = 0; i < 16; i++)
        if (sscanf(hex + 2 * i, "%2hhx", &out[i]) != 1)
            return -1;
    return 0;
}

static int has_suffix(const char *url, const char *suffix)
{
    size_t length = strcspn(url, "?");
    size_t n = strlen(suffix);
    return length >= n && strncmp(url + length - n, suffix, n) == 0;
}

static int choose(void *userdata, const char *url, uint8_t key[16], uint8_t iv[16])
{
    (void)userdata;
    atomic_fetch_add(&calls, 1);
    if (has_suffix(url, ".ctr")) {
        if (strcmp(url, ctr_url) != 0)
            atomic_store(&ctr_url_exact, 0);
        if (atomic_load(&refuse))
            return HC_EINVAL;
        memcpy(key, the_key, 16);
        memcpy(iv, the_iv, 16);
        return HC_CIPHER_AES128_CTR;
    }
    if (has_suffix(url, ".ecb")) {
        memcpy(key, the_key, 16);
        return HC_CIPHER_AES128_ECB;
    }
    return HC_CIPHER_NONE;
}

static unsigned char *plain;
static long plain_size;

/* Reads [offset, offset + length) (length -1: to the end) and compares it
 * with the plaintext; the count read, or a negative code. */
static int64_t read_compare(hc_cache *cache, const char *url, int64_t offset, int64_t length, int *same)
{
    hc_reader *reader = NULL;
    int rc = hc_reader_open(cache, url, offset, length, &reader);
    if (rc != HC_OK)
        return rc;
    static unsigned char buf[8 << 20];
    int64_t done = 0, n = 0;
    while ((n = hc_reader_read(reader, buf + done, sizeof buf - (size_t)done, 20000)) > 0)
        done += n;
    hc_reader_close(reader);
    if (n < 0)
        return n;
    *same = offset + done <= plain_size && memcmp(buf, plain + offset, (size_t)done) == 0;
    return done;
}

static int report(const char *label, int64_t result, int same)
{
    if (result < 0)
        printf("%s: %s\n", label, hc_strerror((int)result));
    else
        printf("%s: %lld bytes, %s\n", label, (long long)result, same ? "match" : "DIFFER");
    return result >= 0 && same;
}

int main(int argc, char **argv)
{
    if (argc != 7 || parse_hex(argv[5], the_key) != 0 || parse_hex(argv[6], the_iv) != 0) {
        fprintf(stderr, "usage: %s CACHE_DIR CTR_URL ECB_URL PLAIN_FILE KEY_HEX IV_HEX\n", argv[0]);
        return 2;
    }
    ctr_url = argv[2];
    FILE *file = fopen(argv[4], "rb");
    if (!file || fseek(file, 0, SEEK_END) != 0 || (plain_size = ftell(file)) < 0) {
        perror(argv[4]);
        return 2;
    }
    rewind(file);
    plain = malloc((size_t)plain_size);
    if (fread(plain, 1, (size_t)plain_size, file) != (size_t)plain_size) {
        perror(argv[4]);
        return 2;
    }
    fclose(file);

    hc_config *config = hc_config_new();
    if (config == NULL || hc_config_set(config, "cache-dir", argv[1]) != HC_OK) {
        fprintf(stderr, "hc_config_set: %s\n", config == NULL ? "out of memory" : hc_config_errmsg(config));
        return 1;
    }
    hc_cache *cache = NULL;
    int rc = hc_open(config, &cache);
    hc_config_free(config);
    if (rc != HC_OK) {
        printf("open: %s\n", hc_strerror(rc));
        return 1;
    }
    printf("set: %s\n", hc_strerror(hc_set_decryption(cache, choose, NULL)));

    int ok = 1, same = 0;
    int64_t n = read_compare(cache, argv[2], 0, -1, &same);
    ok &= report("ctr whole", n, same) && n == plain_size;
    n = read_compare(cache, argv[2], 1000003, 777, &same);
    ok &= report("ctr range", n, same) && n == 777;
    n = read_compare(cache, argv[3], 0, -1, &same);
    ok &= report("ecb whole", n, same) && n == plain_size / 16 * 16;
    n = read_compare(cache, argv[3], 4099, 5000, &same);
    ok &= report("ecb range", n, same) && n == 5000;
    int64_t cached = hc_cache_size(cache);

    atomic_store(&refuse, 1);
    n = read_compare(cache, argv[2], 0, -1, &same);
    report("ctr refused", n, same);
    ok &= n == HC_EINVAL;
    printf("cache size kept: %s\n", hc_cache_size(cache) == cached ? "yes" : "no");
    ok &= hc_cache_size(cache) == cached;

    atomic_store(&refuse, 0);
    n = read_compare(cache, argv[2], 0, -1, &same);
    ok &= report("ctr again", n, same) && n == plain_size;

    printf("callback saw the url as given: %s\n", atomic_load(&ctr_url_exact) ? "yes" : "no");
    ok &= atomic_load(&ctr_url_exact) && atomic_load(&calls) > 0;
    printf("off: %s\n", hc_strerror(hc_set_decryption(cache, NULL, NULL)));
    hc_close(cache);
    free(plain);
    puts(ok ? "all checks passed" : "checks failed");
    return ok ? 0 : 1;
}
