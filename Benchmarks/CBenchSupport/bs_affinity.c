/* CPU pinning for the peer scenarios: each server on one core, the load
 * generator on another (as `taskset -c 0` / `taskset -c 1` would). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "benchsupport.h"

int bs_pin(int pid, int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu >= 0) {
        CPU_SET(cpu, &set);
    } else {
        long n = sysconf(_SC_NPROCESSORS_CONF);
        for (long i = 0; i < n && i < CPU_SETSIZE; i++)
            CPU_SET(i, &set);
    }
    if (pid == 0)
        return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : -errno;
    /* sched_setaffinity takes a thread id: walk the process's threads. */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *dir = opendir(path);
    if (dir == NULL)
        return -errno;
    int status = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        int tid = atoi(entry->d_name);
        if (tid > 0 && sched_setaffinity(tid, sizeof set, &set) != 0 && errno != ESRCH)
            status = -errno;
    }
    closedir(dir);
    return status;
}
