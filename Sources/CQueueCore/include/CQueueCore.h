#ifndef C_QUEUE_CORE_H
#define C_QUEUE_CORE_H

// What QueueCore needs from libc that Swift's Glibc module does not declare.

#include <semaphore.h>
#include <time.h>

// sem_clockwait (glibc 2.30) times a semaphore wait on a clock the caller names:
// CLOCK_MONOTONIC, so a wall-clock jump does not move the deadline as it does
// sem_timedwait's (CLOCK_REALTIME). <semaphore.h> declares it only under
// _GNU_SOURCE, which the Glibc module is built without; this is its prototype.
// Like sem_post, it takes no lock and allocates nothing.
static inline int cqc_sem_clockwait(sem_t *semaphore, clockid_t clock, const struct timespec *deadline) {
    extern int sem_clockwait(sem_t *, clockid_t, const struct timespec *);
    return sem_clockwait(semaphore, clock, deadline);
}

#endif
