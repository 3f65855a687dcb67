import Testing
@testable import QueueCore

/// `judgeCycle`: skipped cycles told from late readings of the server's clock.
@Suite struct CycleJudgingTests {
    struct Seen: Equatable {
        var frame: Int64
        var loss: Int64
        var resolved: Bool
    }

    /// Judges cycles of `n` frames starting at `frames`; returns each verdict.
    func judge(_ frames: [Int64], n: Int = 256, confirm: Int, tracking: Bool = true) -> [Seen] {
        var tracker = CycleSkipTracker(cyclesToConfirm: confirm)
        return frames.map {
            let v = judgeCycle(&tracker, frameTime: $0, frameCount: n, tracking: tracking)
            return Seen(frame: v.frame, loss: v.confirmedLoss, resolved: v.resolved)
        }
    }

    @Test func continuousCyclesLoseNothing() {
        let frames = (0..<10).map { Int64($0 * 256) }
        #expect(judge(frames, confirm: 2) == frames.map { Seen(frame: $0, loss: 0, resolved: false) })
    }

    @Test func skippedCyclesAreConfirmedByTheCyclesAfterThem() {
        // Two cycles (512 frames) skipped after frame 256; output confirms over 2 cycles.
        let seen = judge([0, 256, 1024, 1280, 1536, 1792], confirm: 2)
        #expect(seen == [
            Seen(frame: 0, loss: 0, resolved: false),
            Seen(frame: 256, loss: 0, resolved: false),
            Seen(frame: 512, loss: 0, resolved: false),    // undecided: on the continuous timeline
            Seen(frame: 768, loss: 0, resolved: false),
            Seen(frame: 1536, loss: 512, resolved: true),  // confirmed: the loss goes before this cycle
            Seen(frame: 1792, loss: 0, resolved: false),
        ])
        // Input holds one cycle more before it decides.
        let input = judge([0, 256, 1024, 1280, 1536, 1792], confirm: 3)
        #expect(input.map(\.loss) == [0, 0, 0, 0, 0, 512])
        #expect(input[5].frame == 1792)
    }

    @Test func aLateReadingThenARepeatedFrameIsNoLoss() {
        // The client read the next cycle's frame (768 instead of 512), then the same frame again.
        let seen = judge([0, 256, 768, 768, 1024, 1280], confirm: 2)
        #expect(seen == [
            Seen(frame: 0, loss: 0, resolved: false),
            Seen(frame: 256, loss: 0, resolved: false),
            Seen(frame: 512, loss: 0, resolved: false),
            Seen(frame: 768, loss: 0, resolved: true),  // back on the continuous timeline: dismissed
            Seen(frame: 1024, loss: 0, resolved: false),
            Seen(frame: 1280, loss: 0, resolved: false),
        ])
    }

    @Test func jumpsAreNotLossesWhileNotTracking() {
        let seen = judge([0, 256, 1024, 1280, 1536], confirm: 2, tracking: false)
        #expect(seen == [0, 256, 1024, 1280, 1536].map { Seen(frame: $0, loss: 0, resolved: false) })
    }

    @Test func framesPastThirtyTwoBitsStayContinuous() {
        // JACK's 32-bit frame counter wraps after 2^32 frames (about a day at 48 kHz); the driver
        // extends it to 64 bits, and the judge sees one continuous timeline across the wrap.
        let start: Int64 = (1 << 32) - 512
        let frames = (0..<6).map { start + Int64($0 * 256) }
        #expect(judge(frames, confirm: 2).allSatisfy { $0.loss == 0 && !$0.resolved })
        // A cycle skipped right at the wrap is confirmed with its true size.
        let skipped = [start, start + 256, start + 768, start + 1024, start + 1280]
        let seen = judge(skipped, confirm: 2)
        #expect(seen.map(\.loss) == [0, 0, 0, 0, 256])
        #expect(seen[4].frame == start + 1280)
    }

    @Test func hugeOrBackwardJumpsAreNotLosses() {
        // A new server, a restart, a 32-bit frame time read as if it had wrapped: not a loss.
        let seen = judge([0, 256, 1 << 32, (1 << 32) + 256, 100, 356], confirm: 2)
        #expect(seen.allSatisfy { $0.loss == 0 && !$0.resolved })
        #expect(seen.map(\.frame) == [0, 256, 1 << 32, (1 << 32) + 256, 100, 356])
    }

    @Test func emptyCyclesChangeNothing() {
        var tracker = CycleSkipTracker(cyclesToConfirm: 2)
        _ = judgeCycle(&tracker, frameTime: 0, frameCount: 256, tracking: true)
        let v = judgeCycle(&tracker, frameTime: 9999, frameCount: 0, tracking: true)
        #expect(v.frame == 9999 && v.confirmedLoss == 0)
        #expect(judgeCycle(&tracker, frameTime: 256, frameCount: 256, tracking: true).frame == 256)
    }
}
