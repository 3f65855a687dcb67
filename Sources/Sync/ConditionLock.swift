import Glibc

/// A mutex with one condition variable, for state shared between API threads,
/// queue threads and callbacks. Never used on the realtime side.
public final class ConditionLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    public init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    @inline(__always)
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Wakes every thread waiting on the condition.
    public func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits (lock held) until `predicate` holds or `timeout` seconds pass; returns the predicate.
    @discardableResult
    public func wait(timeout: Double, until predicate: () -> Bool) -> Bool {
        wait(until: .after(seconds: timeout), predicate)
    }

    /// Waits (lock held) until `predicate` holds or `deadline` passes; returns the predicate.
    /// The condition measures CLOCK_MONOTONIC (`pthread_condattr_setclock` in `init`), as `Deadline` does.
    @discardableResult
    public func wait(until deadline: Deadline, _ predicate: () -> Bool) -> Bool {
        var time = deadline.timespec
        while !predicate() {
            if pthread_cond_timedwait(condition, mutex, &time) == ETIMEDOUT { return predicate() }
        }
        return true
    }
}

/// A value behind a mutex, for state shared between non-realtime threads where
/// the standard library's `Mutex` would demand `Sendable` contents (raw pointers). The
/// value is reachable only inside `withLock`, so the compiler keeps the guard.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex = ConditionLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    @inline(__always)
    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        mutex.lock()
        defer { mutex.unlock() }
        return try body(&value)
    }

    /// Holds the lock without the value: for what the lock guards outside it (the queue
    /// engine's `QueueBuffer` objects' fields), or to wait with `wait(timeout:until:)`.
    @inline(__always)
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        mutex.lock()
        defer { mutex.unlock() }
        return try body()
    }

    /// Wakes every thread waiting in `wait`.
    public func broadcast() { mutex.broadcast() }

    /// Waits (lock held, value not in use) until `predicate` holds or `timeout` seconds pass.
    @discardableResult
    public func wait(timeout: Double, until predicate: () -> Bool) -> Bool {
        mutex.wait(timeout: timeout, until: predicate)
    }

    /// Takes the lock and waits until `predicate` holds of the value or `timeout` seconds
    /// pass; returns the predicate.
    @discardableResult
    public func waitUntil(timeout: Double, _ predicate: (inout Value) -> Bool) -> Bool {
        mutex.lock()
        defer { mutex.unlock() }
        return mutex.wait(timeout: timeout) { predicate(&value) }
    }
}
