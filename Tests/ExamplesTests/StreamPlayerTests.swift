import Foundation
import JackTestSupport
import Testing

extension ExamplesTests {
    /// Sources/Examples/StreamPlayer/stream_player.c, an AudioStreamer-style player (a file fed
    /// in 1500-byte pieces to AudioFileStream, its packets played through an output queue),
    /// built with -Wall -Wextra -Werror, plays ADTS AAC and MP3 into a private jackd:
    /// jack_capture's recording is ffmpeg's decode of the file (SNR ≥ 60 dB).
    @Suite struct StreamPlayerTests {
        static let rate = 48000

        @Test(arguments: [("stream.aac", ["-c:a", "aac", "-b:a", "160k"]), ("stream.mp3", ["-c:a", "libmp3lame", "-b:a", "192k"])])
        func theStreamedFileIsWhatJackHears(_ name: String, _ codec: [String]) throws {
            let scratch = try Scratch()
            let program = scratch.path("stream_player")
            let libraries = try CRecorder.libraryDirectory()
            let build = try runProcess([
                try tool("cc", package: "gcc"), "-Wall", "-Wextra", "-Werror", "-std=c11",
                packageRoot.appendingPathComponent("Sources/Examples/StreamPlayer/stream_player.c").path,
                "-I", packageRoot.appendingPathComponent("Sources/CAudioToolbox/include").path,
                "-L", libraries, "-lAudioToolbox", "-lpthread", "-Wl,-rpath,\(libraries):/opt/swift/usr/lib/swift/linux", "-o", program,
            ])
            try #require(build.status == 0, "cc -Wall -Wextra -Werror failed:\n\(build.error)")

            let path = scratch.path(name)
            let ffmpeg = try tool("ffmpeg", package: "ffmpeg")
            let made = try runProcess([ffmpeg, "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=523:sample_rate=\(Self.rate):duration=2",
                                       "-f", "lavfi", "-i", "anoisesrc=r=\(Self.rate):a=0.05:d=2:seed=3", "-filter_complex",
                                       "amix=inputs=2,aformat=channel_layouts=stereo"] + codec + [path])
            try #require(made.status == 0, "ffmpeg: \(made.error)")
            let decodedFile = scratch.path("reference.f32")
            let decoded = try runProcess([ffmpeg, "-nostdin", "-v", "error", "-y", "-i", path, "-f", "f32le", decodedFile])
            try #require(decoded.status == 0, "ffmpeg decode: \(decoded.error)")
            let reference = try Data(contentsOf: URL(fileURLWithPath: decodedFile)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }

            let server = try JackServer(sampleRate: Self.rate, periodFrames: 256)
            defer { server.stop() }
            let (jackCapture, capture, ports) = try startJackCapture(server, scratch: scratch, channels: 2)
            var environment = childEnvironment(server)
            environment["JAQ_OUTPUT_DEVICE"] = ports
            let play = try runProcess([program, path], environment: environment, timeout: 60)
            #expect(play.status == 0, "stream_player exited \(play.status): \(play.output)\(play.error)")
            jackCapture.send(SIGINT)
            #expect(jackCapture.waitForExit() == 0, "\(jackCapture.output)")
            let recording = try soxFloat(capture, scratch: scratch)

            checkFrames(server) {
                let fit = Self.bestFit(recording, reference)
                print("measured: stream_player \(name): SNR \(fit.snr) dB over \(fit.frames) frames, recording offset \(fit.offset)")
                #expect(fit.snr >= 60, "\(name): \(fit.snr) dB")
                #expect(fit.frames >= reference.count / 2 - 2048, "\(fit.frames) of \(reference.count / 2) frames heard")
            }
        }

        /// The offset of the recording at which it matches the reference best (the reference's
        /// frame 0 at recording frame `offset`; the queue may trim the decoder's priming), and
        /// the SNR over all the frames both hold.
        static func bestFit(_ recording: [Float], _ reference: [Float]) -> (snr: Double, offset: Int, frames: Int) {
            guard let first = recording.firstIndex(where: { $0 != 0 }).map({ $0 / 2 }) else { return (-.infinity, 0, 0) }
            func snr(_ offset: Int, limit: Int) -> (Double, Int) {
                var signal = 0.0, noise = 0.0, frames = 0
                var f = max(0, -offset)
                while f < reference.count / 2, (f + offset) * 2 + 1 < recording.count, frames < limit {
                    for c in 0..<2 {
                        let r = Double(reference[f * 2 + c]), d = Double(recording[(f + offset) * 2 + c]) - r
                        signal += r * r
                        noise += d * d
                    }
                    f += 1
                    frames += 1
                }
                return (noise == 0 ? .infinity : 10 * log10(signal / max(noise, 1e-30)), frames)
            }
            var best = (snr: -Double.infinity, offset: 0)
            for offset in (first - 4000)...(first + 3000) {
                let value = snr(offset, limit: 4096).0
                if value > best.snr { best = (value, offset) }
            }
            let whole = snr(best.offset, limit: .max)
            return (whole.0, best.offset, whole.1)
        }
    }
}
