import Testing
@testable import jaq

/// The one time syntax of every time option (Docs/cli.md, "Common to every command").
struct TimeValueTests {
    @Test(arguments: [("90", 90 * 48000), ("1.5", 72000), ("1:30", 90 * 48000), ("1:02:03.5", 3723 * 48000 + 24000),
                      ("480000f", 480000), ("0", 0), ("0:00.25", 12000)] as [(String, Int64)])
    func parses(_ text: String, framesAt48k: Int64) throws {
        #expect(try TimeValue.parse(text).frames(at: 48000) == framesAt48k)
    }

    @Test func framesStayFramesAtAnyRate() throws {
        let value = try TimeValue.parse("44100f")
        #expect(value.frames(at: 96000) == 44100)
        #expect(value.seconds(at: 44100) == 1)
    }

    @Test(arguments: ["90s", "1.5s", "ten", "-1", "1::2", "f", "", "1e400"])
    func refuses(_ text: String) {
        #expect(throws: (any Error).self) { try TimeValue.parse(text) }
    }

    @Test func aTrailingSGetsTheHint() {
        #expect(TimeSpec.problem("480000s") == "a trailing s means samples to sox and seconds elsewhere: write 480000 for seconds or 480000f for frames")
        #expect(TimeSpec.frames("90s", rate: 48000) == nil)
    }
}
