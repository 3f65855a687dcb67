import Synchronization

/// An integer flag shared between threads.
final class SharedFlag: Sendable {
    private let storage = Atomic<Int32>(0)
    var value: Int32 { storage.load(ordering: .relaxed) }
    func set(_ value: Int32) { storage.store(value, ordering: .relaxed) }
}
