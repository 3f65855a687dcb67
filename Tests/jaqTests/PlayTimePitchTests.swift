import Testing
import Foundation
import JackTestSupport
import RefereeTesting
import SoundFile

/// `jaq play --rate/--pitch`, recorded by jack_capture on a private jackd.
@Suite(.serialized, .refereeCrashesAreKnownIssues) struct PlayTimePitchTests {
    /// Writes `seconds` of a 1 kHz sine (amplitude 0.5), float stereo at 48 kHz.
    func writeSine(_ path: String, seconds: Int) throws {
        let info = SoundFile.Info(sampleRate: 48000, channelCount: 2, format: SoundFile.Format(.wav, .float))
        let file = try SoundFile(path: path, mode: .write, format: info)
        let samples = (0..<(seconds * 48000)).flatMap { n -> [Float] in
            let value = Float(0.5 * sin(2 * Double.pi * 1000 * Double(n) / 48000))
            return [value, value]
        }
        _ = samples.withUnsafeBufferPointer { file.writeFrames($0) }
        try file.close()
    }

    /// Left channel of a float recording.
    func left(_ path: String) throws -> [Float] {
        let file = try SoundFile(path: path, mode: .read)
        var samples = [Float](repeating: 0, count: Int(file.info.frameCount) * file.info.channelCount)
        let transfer = samples.withUnsafeMutableBufferPointer { file.readFrames(into: $0) }
        let channels = file.info.channelCount
        try file.close()
        return stride(from: 0, to: transfer.count * channels, by: channels).map { samples[$0] }
    }

    @Test func rateTwoPlaysTheSinePitchKeptInHalfTheTime() throws {
        // jack_capture (a referee) crashing: the scenario again (withRefereeRetries).
        try withRefereeRetries {
            let server = try JackServer()
            defer { server.stop() }
            let dir = scratchDirectory("timepitch")
            defer { removeScratch(dir) }
            try writeSine("\(dir)/sine.wav", seconds: 2)
            let (_, play) = try playAhead(["sine.wav"], options: ["--quiet", "--speed", "2"], server: server, dir: dir,
                                          ports: "jaq-1-sine:out_", count: 2)
            let capture = try server.spawn(["jack_capture", "--daemon", "-d", "7", "-c", "2", "--port", "jaq-1-sine:out_1",
                                            "--port", "jaq-1-sine:out_2", "\(dir)/captured.wav"], output: "\(dir)/capture.log")
            #expect(waitForExit(play) == 0, "\((try? String(contentsOfFile: "\(dir)/play.log", encoding: .utf8)) ?? "")")
            let captured = try waitForReferee(capture, tool: "jack_capture", timeout: 20, log: "\(dir)/capture.log")
            #expect(captured == 0)
            let got = try left("\(dir)/captured.wav")
            let (first, span) = try #require(audibleSpan(got))
            // Rising zero crossings over the steady middle give the frequency.
            let hertz = measuredFrequency(got, in: (first + 4800)..<(first + span - 1 - 4800))
            print("measured: jaq play --rate 2, 2 s of 1 kHz: \(span) frames, \(hertz) Hz")
            // A cycle the loaded machine skipped (an xrun) drops its period, as jaq play does to stay on time.
            let xruns = server.xrunCount
            withKnownIssue(Comment(rawValue: "jackd logged \(xruns) xruns"), isIntermittent: true) {
                #expect(abs(span - 48000) <= 48, "played \(span) frames")
                #expect(abs(hertz - 1000) <= 1, "\(hertz) Hz")
            } when: { xruns > 0 }
        }
    }

    @Test func outOfRangeValuesAreRefusedWithOneLine() throws {
        let dir = scratchDirectory("timepitch-bad")
        defer { removeScratch(dir) }
        try writeSine("\(dir)/sine.wav", seconds: 1)
        for arguments in [["--rate", "3"], ["--pitch", "-3000"], ["--varispeed", "--rate", "1.5", "--pitch", "100"]] {
            let result = try jaq(["play"] + arguments + ["sine.wav"], server: nil, directory: dir)
            #expect(result.status != 0, "\(arguments)")
            #expect(result.error.contains("--rate") || result.error.contains("--pitch"), "\(arguments): \(result.error)")
        }
    }

    /// `jaq render --play-rate/--pitch`: the offline bounce meets the same checks as playback
    /// (TimePitchTests): rate 2 keeps 1 kHz (±1 Hz) in half the time (±1 period); Pitch +1200
    /// doubles the frequency at the same duration; Varispeed at 1.5 raises both.
    @Test(arguments: [(["--play-rate", "2"], 48000, 1000.0), (["--pitch", "1200"], 96000, 2000.0),
                      (["--play-rate", "1.5", "--varispeed"], 64000, 1500.0)])
    func renderBouncesTheSineAtTheRateAndPitch(options: [String], frames: Int, hertz: Double) throws {
        let dir = scratchDirectory("render-timepitch")
        defer { removeScratch(dir) }
        try writeSine("\(dir)/sine.wav", seconds: 2)
        let result = try jaq(["render", "-o", "out.wav"] + options + ["sine.wav"], server: nil, directory: dir)
        #expect(result.status == 0, "\(result.error)")
        let got = try left("\(dir)/out.wav")
        let (first, span) = try #require(audibleSpan(got))
        let measured = measuredFrequency(got, in: (first + 4800)..<(first + span - 1 - 4800))
        print("measured: jaq render \(options.joined(separator: " ")), 2 s of 1 kHz: \(span) frames, \(measured) Hz")
        #expect(abs(span - frames) <= 48, "rendered \(span) frames")
        #expect(abs(measured - hertz) <= 1, "\(measured) Hz")
        // Out of range: one line naming the option, a non-zero exit.
        let bad = try jaq(["render", "-o", "x.wav", "--play-rate", "3", "sine.wav"], server: nil, directory: dir)
        #expect(bad.status != 0 && bad.error.contains("--play-rate"), "\(bad.error)")
        let keeps = try jaq(["render", "-o", "x.wav", "--time-domain", "--pitch", "100", "sine.wav"], server: nil, directory: dir)
        #expect(keeps.status != 0 && keeps.error.contains("--time-domain"), "\(keeps.error)")
    }
}

/// Rubber Band is opened when first used, never linked (its GPL-2+ would bind every program
/// linking libAudioToolbox.so): without it, the Spectral and TimeDomain units are refused with
/// one line, Varispeed (libsoxr) and everything else still work.
@Suite struct RubberBandMissingTests {
    @Test func withoutRubberBandTheSpeedSaysWhyAndVarispeedStillWorks() throws {
        let dir = scratchDirectory("no-rubberband")
        defer { removeScratch(dir) }
        try writeRamp("\(dir)/a.wav", frames: 48000, step: 97)
        var environment = ProcessInfo.processInfo.environment
        environment["JAQ_RUBBERBAND_LIBRARY"] = "librubberband-not-here.so.2"
        environment["JACK_NO_START_SERVER"] = "1"
        func render(_ options: [String], _ output: String) throws -> (status: Int32, output: String, error: String) {
            try runProcess([jaqBinary, "render", "-o", output] + options + ["a.wav"], environment: environment, currentDirectory: dir)
        }
        for options in [["--speed", "1.5"], ["--pitch", "100"], ["--speed", "0.8", "--time-domain"]] {
            let refused = try render(options, "x.wav")
            #expect(refused.status == 1, "\(options): \(refused.error)")
            #expect(refused.error.contains("Rubber Band is not installed") && refused.error.contains("--varispeed"), "\(refused.error)")
        }
        let varispeed = try render(["--speed", "1.5", "--varispeed"], "v.wav")
        #expect(varispeed.status == 0, "\(varispeed.error)")
        #expect(abs(try readPlanes("\(dir)/v.wav")[0].count - 32000) <= 256)
        let plain = try render([], "p.wav")
        #expect(plain.status == 0, "\(plain.error)")
        #expect(try readPlanes("\(dir)/p.wav")[0].count == 48000)
    }
}
