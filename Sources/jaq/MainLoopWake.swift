import Sync

/// What a command's main loop waits on between its looks (`jaq record`, `jaq play`): posted by
/// what it must see at once — a signal (the handler posts: `sem_post` is async-signal-safe), the
/// take writer's last frame, error or end, a player's queue starting or stopping, a read error.
/// The loop still looks at its own pace (its display, the clock), but never sleeps through these.
let mainLoopWake = Semaphore()
