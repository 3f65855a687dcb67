import Foundation
import JackTestSupport
import Testing

/// Hostile packet descriptions enqueued on AAC and MP3 output queues (FileFuzz descriptions:
/// a ManualDriver, no server, in a child process so a crash fails this test, not the runner).
/// `make fuzz` runs it for FUZZ_ITERATIONS buffers (JAQ_DESCRIPTION_FUZZ_ITERATIONS).
@Suite struct HostileDescriptionTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    @Test func hostileDescriptionsGetTheReferenceCodesAndPlayFiniteAudio() throws {
        let environment = ProcessInfo.processInfo.environment
        let iterations = environment["JAQ_DESCRIPTION_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 600
        let seed = environment["JAQ_DESCRIPTION_FUZZ_SEED"] ?? "13"
        let output = try FileFuzzProcess.run(["descriptions", "--seed", seed, "--iterations", "\(iterations)", scratch.path],
                                             timeout: max(120, Double(iterations) / 20))
        for codec in ["aac", "mp3"] {
            let results = try FileFuzzProcess.results(output, for: codec)
            #expect(results["unexpected"] == "0", "\(codec): \(output)")
            #expect(results["finite"] == "yes", "\(codec): what played stays finite")
            #expect(results["played"] == "yes", "\(codec): the valid buffers played")
            // Each kind of description was tried, and got the reference's code: kAudio_ParamError
            // (-50) for descriptions that do not describe the buffer, BufferEmpty (-66686) for an
            // empty buffer, noErr for what decodes (or plays as silence with ConverterError).
            let expected: [String: String] = [
                "valid": "0", "offset-past-end": "-50", "negative-offset": "-50", "zero-size": "-50", "huge-size": "-50",
                "overlapping": "0", "more-than-allocated": "0", "count-beyond-bytes": "-50", "no-descriptions": "-50",
                "wrong-variable-frames": "0", "huge-variable-frames": "-50", "empty-buffer": "-66686", "mangled-data": "0",
                "own-count-over-capacity": "0", "byte-size-over-capacity": "-50",
            ]
            for (mutation, code) in expected {
                let codes = results[mutation] ?? "-"
                #expect(codes.hasPrefix("\(code)x") && !codes.contains(","), "\(codec) \(mutation): \(codes), expected only \(code)")
            }
            // Mangled and overlapping packets reached the decoder: ConverterError holds 'bada'.
            #expect(results["converter-error"] == "\(0x6261_6461)", "\(codec): ConverterError \(results["converter-error"] ?? "-")")
        }
    }
}
