import Synchronization

/// A single-producer/single-consumer ring of plain values (commands, events),
/// fixed capacity, never reallocated. Each use documents its producer and
/// consumer threads; pushing into a full ring fails instead of waiting.
public struct EventRing<Element: BitwiseCopyable>: ~Copyable {
    @usableFromInline let capacity: Int
    @usableFromInline let mask: Int
    @usableFromInline let storage: UnsafeMutablePointer<Element>
    @usableFromInline let head = Atomic<Int>(0)  // next slot to write (producer)
    @usableFromInline let tail = Atomic<Int>(0)  // next slot to read (consumer)

    public init(minimumCapacity: Int) {
        var capacity = 8
        while capacity < minimumCapacity { capacity <<= 1 }
        self.capacity = capacity
        self.mask = capacity - 1
        storage = .allocate(capacity: capacity)
    }

    deinit { storage.deallocate() }

    /// Consumer: drops everything queued.
    public func removeAll() {
        tail.store(head.load(ordering: .acquiring), ordering: .releasing)
    }
}

extension EventRing {
    /// Producer: appends `element`; false if the ring is full.
    @inlinable @inline(__always) @discardableResult
    public func push(_ element: Element) -> Bool {
        let h = head.load(ordering: .relaxed)
        guard h - tail.load(ordering: .acquiring) < capacity else { return false }
        (storage + (h & mask)).initialize(to: element)
        head.store(h + 1, ordering: .releasing)
        return true
    }

    /// Consumer: the oldest element without removing it.
    @inlinable @inline(__always)
    public func peek() -> Element? {
        let t = tail.load(ordering: .relaxed)
        guard t < head.load(ordering: .acquiring) else { return nil }
        return storage[t & mask]
    }

    /// Consumer: removes and returns the oldest element.
    @inlinable @inline(__always)
    public func pop() -> Element? {
        let t = tail.load(ordering: .relaxed)
        guard t < head.load(ordering: .acquiring) else { return nil }
        let element = storage[t & mask]
        tail.store(t + 1, ordering: .releasing)
        return element
    }

}
