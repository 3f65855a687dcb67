import Glibc
import Synchronization

/// A sequence lock: one writer publishes a small plain value (a few words that belong
/// together, such as a time base), any number of readers take consistent copies of it
/// without ever making the writer wait.
///
/// The barriers are the C11 seqlock pattern (H. Boehm, "Can seqlocks get along with
/// programming language memory models?", 2012), as Linux's `seqcount_t` writes them once
/// for every user, and are correct on weakly ordered CPUs (arm64) as well as on x86-64:
/// - writer: sequence odd (relaxed store), release fence, the value's words (relaxed
///   atomic stores), sequence even (release store);
/// - reader: sequence (acquire load), the words (relaxed atomic loads), acquire fence,
///   sequence again (relaxed load); the copy is good if both were the same even number.
///
/// The value is kept as `Atomic<UInt64>` words, so that a reader racing the writer reads
/// stale or new words, never undefined ones, and throws the copy away.
///
/// Thread safety: `write` and `writerValue` from one thread at a time (the realtime
/// thread, or a control thread while no cycle can run); `read` from any thread.
/// Realtime safety: `write` takes no lock, allocates nothing and never waits.
public struct SeqLock<Value: BitwiseCopyable>: ~Copyable {
    /// Even when the words are stable; odd while the writer changes them. 0: never written.
    @usableFromInline let sequence = Atomic<Int>(0)
    @usableFromInline let words: UnsafeMutablePointer<Atomic<UInt64>>
    @usableFromInline let wordCount: Int

    /// A lock holding `initial` (readers get nil until the first `write`).
    public init(_ initial: Value) {
        precondition(MemoryLayout<Value>.size <= MemoryLayout<SeqLockWords>.size, "SeqLock holds 8 words at most")
        wordCount = (MemoryLayout<Value>.size + 7) / 8
        words = .allocate(capacity: max(wordCount, 1))
        let bits = SeqLockWords(initial)
        for i in 0..<wordCount { (words + i).initialize(to: Atomic(bits[i])) }
    }

    deinit {
        words.deinitialize(count: wordCount)
        words.deallocate()
    }

    /// Writer: publishes `value`.
    /// (Not marked `@_noLocks` itself: the checker rejects unspecialized generic code. It
    /// is checked, specialized, inside every `@_noLocks` kernel that calls it.)
    @inline(__always)
    public func write(_ value: Value) {
        let bits = SeqLockWords(value)
        let start = sequence.load(ordering: .relaxed)
        sequence.store(start &+ 1, ordering: .relaxed)
        // Orders the odd sequence before every word below: a reader that sees a new word
        // and then fences (acquire) sees the odd sequence or a later one.
        atomicMemoryFence(ordering: .releasing)
        for i in 0..<wordCount { words[i].store(bits[i], ordering: .relaxed) }
        sequence.store(start &+ 2, ordering: .releasing)
    }

    /// Writer: the value last written (the writer's own view: no retry needed).
    @inline(__always)
    public func writerValue() -> Value {
        var bits = SeqLockWords()
        for i in 0..<wordCount { bits[i] = words[i].load(ordering: .relaxed) }
        return bits.value(as: Value.self)
    }

    /// True once the writer published a value.
    public var isWritten: Bool { sequence.load(ordering: .acquiring) != 0 }

    /// Reader: a consistent copy of the value last written; nil before the first write.
    ///
    /// Retries while the writer is in the middle of a write: spinning a few times, then
    /// yielding the processor (a writer preempted mid-write gets to finish). After
    /// `maximumAttempts` failed attempts it gives up and returns nil, as before the first
    /// write: callers treat the value as not (yet) available rather than use a torn one.
    public func read(maximumAttempts: Int = 10_000) -> Value? {
        for attempt in 0..<maximumAttempts {
            if attempt >= 64 { sched_yield() }
            let before = sequence.load(ordering: .acquiring)
            if before == 0 { return nil }
            if before & 1 != 0 { continue }
            var bits = SeqLockWords()
            for i in 0..<wordCount { bits[i] = words[i].load(ordering: .relaxed) }
            // Orders the word loads before the second sequence load.
            atomicMemoryFence(ordering: .acquiring)
            if sequence.load(ordering: .relaxed) == before { return bits.value(as: Value.self) }
        }
        return nil
    }
}

/// Up to eight words of a `SeqLock` value, on the stack.
@usableFromInline
struct SeqLockWords {
    @usableFromInline var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)

    @inline(__always) @usableFromInline
    init() {}

    /// The words of `value` (the bytes past its size are 0).
    @inline(__always) @usableFromInline
    init<Value: BitwiseCopyable>(_ value: Value) {
        withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: value, as: Value.self) }
    }

    @inline(__always) @usableFromInline
    subscript(index: Int) -> UInt64 {
        get { withUnsafeBytes(of: storage) { $0.load(fromByteOffset: index * 8, as: UInt64.self) } }
        set { withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: newValue, toByteOffset: index * 8, as: UInt64.self) } }
    }

    @inline(__always) @usableFromInline
    func value<Value: BitwiseCopyable>(as type: Value.Type) -> Value {
        withUnsafeBytes(of: storage) { $0.loadUnaligned(as: Value.self) }
    }
}
