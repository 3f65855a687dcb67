import CJack
import Testing
@testable import JackControl

/// The transport watch's kernel, cycle by cycle, without a server: a rolling transport whose
/// position jumps (a DAW's loop) puts each relocation in the ring, in order, and those that find
/// it full are counted, not lost silently.
@Suite struct TransportWatchTests {
    final class Watch {
        let state = UnsafeMutablePointer<TransportWatch>.allocate(capacity: 1)
        var frame: UInt32 = 48_000
        var position: UInt32 = 0

        init() { state.initialize(to: TransportWatch(client: OpaquePointer(bitPattern: 1)!)) }
        deinit {
            state.deinitialize(count: 1)
            state.deallocate()
        }

        /// One 256-frame cycle rolling from `position`.
        func roll(from position: UInt32? = nil) {
            if let position { self.position = position }
            watchTransportCycle(state, state: JackTransportRolling, position: self.position, cycleFrame: frame)
            frame &+= 256
            self.position &+= 256
        }

        func drain() -> [RawRelocation] {
            var out: [RawRelocation] = []
            while let relocation = state.pointee.relocations.pop() { out.append(relocation) }
            return out
        }
    }

    @Test func aLoopIsOneRelocationAPass() {
        let watch = Watch()
        for _ in 0..<4 { watch.roll() }
        #expect(watch.drain().isEmpty, "rolling on is no relocation")
        let jumpFrame = watch.frame
        watch.roll(from: 96_000)
        for _ in 0..<3 { watch.roll() }
        let seen = watch.drain()
        #expect(seen.count == 1 && seen.first?.frame == jumpFrame && seen.first?.position == 96_000, "\(seen)")
    }

    @Test func relocationsThatFindTheRingFullAreCounted() {
        let watch = Watch()
        watch.roll()
        for _ in 0..<(TransportWatch.relocationCapacity + 3) { watch.roll(from: 0) }
        let seen = watch.drain()
        #expect(seen.count == TransportWatch.relocationCapacity)
        #expect(watch.state.pointee.relocationsLost.load(ordering: .relaxed) == 3)
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $1.frame == $0.frame &+ 256 }, "in order, the oldest kept")
    }
}
