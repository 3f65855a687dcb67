import Glibc
import Testing
import Synchronization
@testable import QueueCore

@Suite struct SeqLockTests {
    /// Five words that belong together: any mix of two writes breaks the relations.
    struct Group: BitwiseCopyable, Equatable {
        var a: Int64
        var b: Int64
        var c: Int64
        var d: Int64
        var e: Int64
        init(_ a: Int64) {
            self.a = a
            b = a &* 3 &+ 1
            c = ~a
            d = a ^ 0x5555_5555_5555_5555
            e = a &* 7
        }
        var isConsistent: Bool { self == Group(a) }
    }

    /// Shared between the test's threads (the lock is ~Copyable: it lives behind a pointer).
    final class Shared: @unchecked Sendable {
        let lock = UnsafeMutablePointer<SeqLock<Group>>.allocate(capacity: 1)
        let stop = Atomic<Bool>(false)
        let torn = Atomic<Int>(0)
        let wentBack = Atomic<Int>(0)
        let written = Atomic<Int64>(0)
        /// Per reader: good reads, and how often the value read changed.
        let readerResults = Mutex<[(reads: Int, changes: Int)]>([])
        /// Per reader, live: how often the value it read changed.
        let changes = UnsafeMutablePointer<Atomic<Int>>.allocate(capacity: 3)
        init() {
            lock.initialize(to: SeqLock(Group(0)))
            for r in 0..<3 { (changes + r).initialize(to: Atomic(0)) }
        }
        deinit {
            lock.deinitialize(count: 1)
            lock.deallocate()
            changes.deinitialize(count: 3)
            changes.deallocate()
        }
    }

    @Test func aValueIsNilUntilWrittenAndReadBackWhole() {
        struct Odd: BitwiseCopyable, Equatable { var x: Int32; var y: Int32; var z: Int32 }  // 12 bytes: not whole words
        let lock = SeqLock(Odd(x: 1, y: 2, z: 3))
        #expect(lock.read() == nil)
        let written = lock.isWritten
        #expect(!written)
        lock.write(Odd(x: -7, y: 8, z: .max))
        #expect(lock.read() == Odd(x: -7, y: 8, z: .max))
        #expect(lock.writerValue() == Odd(x: -7, y: 8, z: .max))
        lock.write(Odd(x: 0, y: 0, z: 1))
        #expect(lock.read() == Odd(x: 0, y: 0, z: 1))
    }

    /// One writer at full speed, three readers, for a second (up to 3 s on a loaded machine,
    /// until every reader has seen the value change 100 times): no reader ever sees a group
    /// mixed from two writes, nor an older group after a newer one. (A writer without the odd
    /// phase makes this test fail with millions of torn reads.) The writer keeps the sequence
    /// odd most of the time, so a reader gets a good copy only now and then: few changes seen.
    @Test func readersRacingAWriterNeverSeeATornGroup() {
        let shared = Shared()
        let readers = (0..<3).map { r in
            QueueThread(name: "seqlock-reader") {
                var last: Int64 = -1
                var reads = 0
                var changes = 0
                while !shared.stop.load(ordering: .relaxed) {
                    guard let group = shared.lock.pointee.read() else { continue }
                    reads += 1
                    if !group.isConsistent { shared.torn.add(1, ordering: .relaxed) }
                    if group.a < last { shared.wentBack.add(1, ordering: .relaxed) }
                    if group.a != last {
                        changes += 1
                        shared.changes[r].store(changes, ordering: .relaxed)
                    }
                    last = group.a
                }
                shared.readerResults.withLock { $0.append((reads, changes)) }
            }
        }
        let writer = QueueThread(name: "seqlock-writer") {
            var a: Int64 = 0
            while !shared.stop.load(ordering: .relaxed) {
                a += 1
                shared.lock.pointee.write(Group(a))
            }
            shared.written.store(a, ordering: .relaxed)
        }
        let started = HostClock.nanoseconds()
        repeat { usleep(10_000) } while HostClock.nanoseconds() - started < 1_000_000_000
            || ((0..<3).contains { shared.changes[$0].load(ordering: .relaxed) < 100 }
                && HostClock.nanoseconds() - started < 3_000_000_000)
        shared.stop.store(true, ordering: .relaxed)
        writer.join()
        for reader in readers { reader.join() }

        #expect(shared.torn.load(ordering: .relaxed) == 0, "torn reads")
        #expect(shared.wentBack.load(ordering: .relaxed) == 0, "a read older than the one before")
        #expect(shared.written.load(ordering: .relaxed) > 10_000, "the writer made progress")
        let results = shared.readerResults.withLock { $0 }
        #expect(results.count == 3)
        for (reads, changes) in results {
            #expect(reads >= 10, "a reader made progress")
            #expect(changes >= 10, "a reader saw the value change")
        }
    }
}
