// The engine's locks and waits are Sync's (Locked, ConditionLock, Semaphore, Deadline,
// HostClock), shared with the CLI's threads; every importer of QueueCore sees them.
@_exported import Sync
