#ifndef ZKLOCK_TREE_H
#define ZKLOCK_TREE_H
/* The processes below one process, found by their parent links in
 * /proc (Linux): signalled once each, or killed and reaped to the last.
 * A process group would miss the ones that call setsid() or setpgid();
 * parent links miss none, as long as the one at the root is a child
 * subreaper (prctl PR_SET_CHILD_SUBREAPER), so that a process whose
 * parent dies is re-parented to it instead of leaving the tree. */

#include <stddef.h>
#include <sys/types.h>

/* Pids already signalled, so that each process gets a signal once. */
struct pidset {
    pid_t *v;
    size_t n, cap;
};

void pidset_free(struct pidset *s);

/* One process whose end matters (the command): its wait status once
 * reaped. */
struct watch {
    pid_t pid;
    int status;
    int reaped;
};

/* Sends SIG, followed by SIGCONT (so that a stopped process can act on
 * it), to every living process below ROOT that is not in SEEN, and adds
 * it there. One scan: a scan after the signals went out would also find
 * what their handlers fork for the clean-up (a trap's date or rm) and
 * kill it mid-way. A child forked by a process not yet signalled, in
 * the same moment, is missed: it ends with the SIGKILL that follows
 * (--kill-after), or with what COMMAND leaves when it exits. Returns
 * how many it signalled, or -1 when /proc cannot be read. */
int tree_signal(pid_t root, int sig, struct pidset *seen);

/* SIGKILLs every process below the caller and reaps them, until the
 * caller has no child left. The caller must be a child subreaper: a
 * killed process's children come back to it, and a process cannot fork
 * once SIGKILL is pending, so each round leaves fewer. W (or NULL)
 * learns its process's end if it is reaped on the way. Returns how many
 * processes it killed. */
int tree_kill_all(struct watch *w);

/* Reaps the caller's children that have ended, without waiting; W (or
 * NULL) as for tree_kill_all. Returns 1 while the caller has children
 * left, 0 when it has none: for a subreaper, when the tree is empty. */
int tree_reap(struct watch *w);

#endif
