/*
 * Changes the encryption key of a cache folder encrypted at rest with
 * hc_rekey: every file is re-encrypted in place, so the old key opens
 * nothing afterwards. The folder must not be open (by this or another
 * process). Interrupted, the folder refuses to open until the same call is
 * made again, which finishes the work. Exits 0 when rekeyed, 1 otherwise.
 *
 *   usage: rekey CACHE_DIR OLD_KEY_FILE NEW_KEY_FILE
 *   gcc -Wall -Werror rekey.c $(pkg-config --cflags --libs httpcache)
 */
#include <httpcache.h>

#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s CACHE_DIR OLD_KEY_FILE NEW_KEY_FILE\n", argv[0]);
        return 2;
    }
    int rc = hc_rekey(argv[1], argv[2], argv[3]);
    printf("rekey: %s\n", hc_strerror(rc));
    return rc == HC_OK ? 0 : 1;
}
