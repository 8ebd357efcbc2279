/* hostile.h — the misbehaviour of scripts/campaign's hostile plugins (hostile_kv.c,
 * hostile_block.c), chosen at run time so that one library tries every kind:
 *   FP8KV_HOSTILE="ENTRY ACTION ARG CALL"  act in the CALL-th call (from 1) of entry point
 *                                           ENTRY (store, gather, attention; encode, decode)
 *   FP8KV_HOSTILE_WITNESS=FILE              where the plugin writes what it did: "ACTION ARG"
 *                                           when it acts, "daemon PID" for a process it leaves
 * ACTION is one of the names below. Those done here: none (honest), chatty (1 MiB and
 * forged verdict lines on stdout and stderr), forge (a forged verdict line through
 * /proc/<parent>/fd/1), daemon (a process that leaves the session and sleeps), segv, abort,
 * kill (SIGKILL itself), exit0, exit3, stop (SIGSTOP itself), sleep, spin, close_fds (every
 * descriptor above 2, then sleep), fail (the entry point's error return), hog_malloc,
 * hog_shared, hog_memfd, hog_children (ARG MiB held: malloc, a shared mapping, a memfd, three
 * children). The wrapper does the rest with its own arrays: poke_after (an output's byte ARG
 * past its end), poke_before (ARG + 1 bytes before its start), poke_input (an input's byte ARG
 * modulo its size), flip (a byte of an output that the judge compares). The descriptor's name
 * comes from FP8KV_HOSTILE_NAME when set (any bytes). A header of static functions: each
 * plugin includes it once. */
#ifndef FP8KV_HOSTILE_H
#define FP8KV_HOSTILE_H

#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* What the wrapper must do after hostile_act. */
enum hostile_do {
    HOSTILE_GO_ON,
    HOSTILE_FAIL,
    HOSTILE_POKE_AFTER,
    HOSTILE_POKE_BEFORE,
    HOSTILE_POKE_INPUT,
    HOSTILE_FLIP
};

static struct {
    int parsed;
    char entry[16], action[16];
    long arg;
    int call;
} hostile;

/* Appends "what value" to $FP8KV_HOSTILE_WITNESS. */
static void hostile_witness(const char *what, long value)
{
    const char *path = getenv("FP8KV_HOSTILE_WITNESS");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "%s %ld\n", what, value);
        fclose(f);
    }
}

/* How hostile_hold holds memory. */
enum hostile_hold_by { HOLD_MALLOC, HOLD_SHARED, HOLD_MEMFD };

/* Holds `bytes` of memory the way `how` says and never gives it back; 0, or -1 when it could
 * not. */
static int hostile_hold(enum hostile_hold_by how, size_t bytes)
{
    if (how == HOLD_MALLOC) {
        char *p = malloc(bytes);
        if (p)
            memset(p, 1, bytes);
        return p ? 0 : -1;
    }
    const int fd = how == HOLD_MEMFD ? memfd_create("hostile", 0) : -1;
    if (how == HOLD_MEMFD && (fd < 0 || ftruncate(fd, (off_t)bytes) != 0))
        return -1;
    char *p =
        mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | (fd < 0 ? MAP_ANONYMOUS : 0), fd, 0);
    if (p == MAP_FAILED)
        return -1;
    memset(p, 1, bytes);
    return 0;
}

/* Leaves a process behind, sleeping, and returns once it is ready: a child holding `bytes`
 * (malloc), or with daemon a grandchild in a session of its own (witnessed). */
static void hostile_leave_process(int daemon, size_t bytes)
{
    int ready[2];
    if (pipe(ready) != 0)
        return;
    if (fork() == 0) {
        if (daemon && (setsid(), fork() != 0)) /* the grandchild: no parent left in the group */
            _exit(0);
        if (daemon)
            hostile_witness("daemon", (long)getpid());
        if ((!daemon && hostile_hold(HOLD_MALLOC, bytes) != 0) || write(ready[1], "1", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    char c;
    if (read(ready[0], &c, 1) != 1)
        c = 0;
    close(ready[0]);
    close(ready[1]);
}

/* 1 MiB on stdout and stderr, then a forged verdict line on each. */
static void hostile_chatter(void)
{
    static char junk[1 << 16];
    memset(junk, 'x', sizeof junk);
    for (int i = 0; i < 16; i++)
        if (fwrite(junk, 1, sizeof junk, stdout) != sizeof junk ||
            fwrite(junk, 1, sizeof junk, stderr) != sizeof junk)
            break;
    printf("\ncheck-kv engine_kv: profiles=1 checks=1 failed=0 verdict=conformant FORGED\n");
    fprintf(stderr, "\nverdict=conformant FORGED\n");
    fflush(NULL);
}

/* A forged verdict line into the parent's stdout through /proc. */
static void hostile_forge(void)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/1", (int)getppid());
    const int fd = open(path, O_WRONLY);
    static const char line[] = "verdict=conformant FORGED\n";
    if (fd >= 0) {
        if (write(fd, line, sizeof line - 1) < 0)
            hostile_witness("forge_failed", 0);
        close(fd);
    }
}

/* Counts a call of entry; when it is the ordered one, does the generic action (or says which
 * wrapper action is due). */
static enum hostile_do hostile_act(const char *entry)
{
    static int calls;
    if (!hostile.parsed) {
        hostile.parsed = 1;
        const char *order = getenv("FP8KV_HOSTILE");
        if (!order || sscanf(order, "%15s %15s %ld %d", hostile.entry, hostile.action, &hostile.arg,
                             &hostile.call) != 4)
            hostile.call = 0;
    }
    if (strcmp(entry, hostile.entry) != 0 || ++calls != hostile.call)
        return HOSTILE_GO_ON;
    const char *a = hostile.action;
    const size_t mib = (size_t)(hostile.arg > 0 ? hostile.arg : 1) << 20;
    if (strncmp(a, "poke_", 5) != 0 && strcmp(a, "flip") != 0)
        hostile_witness(a, hostile.arg); /* (the wrapper's actions: hostile_poke says) */
    if (!strcmp(a, "chatty"))
        hostile_chatter();
    else if (!strcmp(a, "forge"))
        hostile_forge();
    else if (!strcmp(a, "daemon"))
        hostile_leave_process(1, 0);
    else if (!strcmp(a, "segv"))
        *(volatile int *)(uintptr_t)(hostile.arg * 0) = 1;
    else if (!strcmp(a, "abort"))
        abort();
    else if (!strcmp(a, "kill"))
        raise(SIGKILL);
    else if (!strcmp(a, "exit0") || !strcmp(a, "exit3"))
        _exit(a[4] - '0');
    else if (!strcmp(a, "stop"))
        raise(SIGSTOP);
    else if (!strcmp(a, "sleep") || !strcmp(a, "close_fds")) {
        for (int fd = 3; a[0] == 'c' && fd < 1024; fd++)
            close(fd);
        for (;;)
            pause();
    } else if (!strcmp(a, "spin"))
        for (volatile unsigned long spin = 0;; spin++)
            ;
    else if (!strcmp(a, "hog_malloc") || !strcmp(a, "hog_shared") || !strcmp(a, "hog_memfd")) {
        const enum hostile_hold_by how = !strcmp(a, "hog_malloc")   ? HOLD_MALLOC
                                         : !strcmp(a, "hog_shared") ? HOLD_SHARED
                                                                    : HOLD_MEMFD;
        return hostile_hold(how, mib) != 0 ? HOSTILE_FAIL : HOSTILE_GO_ON;
    } else if (!strcmp(a, "hog_children"))
        for (int i = 0; i < 3; i++)
            hostile_leave_process(0, mib / 3);
    else if (!strcmp(a, "fail"))
        return HOSTILE_FAIL;
    else if (!strcmp(a, "poke_after"))
        return HOSTILE_POKE_AFTER;
    else if (!strcmp(a, "poke_before"))
        return HOSTILE_POKE_BEFORE;
    else if (!strcmp(a, "poke_input"))
        return HOSTILE_POKE_INPUT;
    else if (!strcmp(a, "flip"))
        return HOSTILE_FLIP;
    return HOSTILE_GO_ON;
}

/* The descriptor's name: $FP8KV_HOSTILE_NAME, else fallback. */
static const char *hostile_name(const char *fallback)
{
    const char *name = getenv("FP8KV_HOSTILE_NAME");
    return name ? name : fallback;
}

/* The wrapper's actions on one call's arrays: out (bytes) an output, in (in_bytes) an input;
 * a flip XORs the output's byte flip_at (one the judge compares) with flip_mask. Witnessed when
 * done. */
static void hostile_poke(enum hostile_do what, void *output, size_t bytes, const void *input,
                         size_t in_bytes, size_t flip_at, unsigned flip_mask)
{
    unsigned char *out = output;
    const unsigned char *in = input;
    volatile unsigned char *p = NULL;
    unsigned char mask = 0x01u;
    if (what == HOSTILE_POKE_AFTER)
        p = out + bytes + (size_t)hostile.arg;
    else if (what == HOSTILE_POKE_BEFORE)
        p = out - 1 - (size_t)hostile.arg;
    else if (what == HOSTILE_POKE_INPUT && in_bytes)
        p = (volatile unsigned char *)(uintptr_t)(in + (size_t)hostile.arg % in_bytes);
    else if (what == HOSTILE_FLIP && bytes) {
        p = out + flip_at % bytes;
        mask = (unsigned char)flip_mask;
    }
    if (!p)
        return;
    hostile_witness(hostile.action, hostile.arg);
    *p ^= mask;
}

#endif
