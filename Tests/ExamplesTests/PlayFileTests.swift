import Foundation
import JackTestSupport
import RefereeTesting
import Testing

extension ExamplesTests {
    /// PlayFile, the playing-audio guide's player, on a private server (48 kHz, 256-frame period)
    /// while an independent client records its ports.
    @Suite struct PlayFileTests {
        static let rate = 48000
        /// Four seconds of stereo noise: a 16-bit WAV as a user would play.
        static let seconds = 4

        /// Writes the test file and returns it with its samples as PlayFile's ports carry them.
        func makeFile(_ scratch: Scratch) throws -> (path: String, source: [Int16]) {
            let source = noise(frames: Self.seconds * Self.rate, channels: 2)
            let path = scratch.path("noise.wav")
            try writeWAV(path, source, channels: 2, rate: Self.rate)
            return (path, source)
        }

        @Test func anInputQueueRecordsEveryFrameExactlyInTheCycleItIsPlayed() throws {
            let scratch = try Scratch()
            let (path, source) = try makeFile(scratch)
            let server = try JackServer(sampleRate: Self.rate, periodFrames: 256)
            defer { server.stop() }
            try withQueues(on: server) {
                let recorder = try QueueRecorder(server: server, channels: 2, name: "examples-recorder")
                defer { recorder.dispose() }
                try recorder.start()

                let play = try runProcess([try example("PlayFile"), path, "--device", recorder.ports],
                                          environment: server.environment, timeout: 30)
                #expect(play.status == 0, "PlayFile exited \(play.status): \(play.output)\(play.error)")
                let recording = try recorder.stop()

                #expect(number(after: "played ", in: play.output) == Int64(source.count / 2))
                let playStart = try #require(number(after: "from device frame ", in: play.output), "\(play.output)")
                let recordStart = recorder.startDeviceFrame
                checkFrames(server) {
                    // int16 x plays as the float x / 32768, exactly.
                    let expected = source.map { Float($0) / 32768 }
                    guard let offset = locate(expected, in: recording, channels: 2) else { return }
                    // Latency: the JACK frame where the recorder got the file's first frame, minus the
                    // frame where PlayFile's queue played it. A client connected to a queue's output
                    // ports runs after it in the same cycle, so this is 0.
                    let latency = recordStart + Int64(offset) - playStart
                    print("measured: PlayFile -> input queue: latency \(latency) frames (first frame at recording frame \(offset))")
                    #expect(latency == 0)
                }
            }
        }

        @Test func jackCaptureRecordsEveryFrameExactly() throws {
            let scratch = try Scratch()
            let (path, source) = try makeFile(scratch)
            let server = try JackServer(sampleRate: Self.rate, periodFrames: 256)
            defer { server.stop() }
            // jack_capture makes its ports and connects nothing (-mc); PlayFile connects to them.
            let (jackCapture, capture, ports) = try startJackCapture(server, scratch: scratch, channels: 2)

            let play = try runProcess([try example("PlayFile"), path, "--device", ports],
                                      environment: server.environment, timeout: 30)
            #expect(play.status == 0, "PlayFile exited \(play.status): \(play.output)\(play.error)")
            jackCapture.send(SIGINT)
            #expect(jackCapture.waitForExit() == 0, "\(jackCapture.output)")

            // jack_capture writes 32-bit float WAV: int16 x is x / 32768 there too.
            let recording = try soxFloat(capture, scratch: scratch)
            checkFrames(server) {
                let expected = source.map { Float($0) / 32768 }
                guard let offset = locate(expected, in: recording, channels: 2) else { return }
                // Where jack_capture's file starts is its own business (when it began writing).
                print("measured: PlayFile -> jack_capture: first frame at file frame \(offset) (jack_capture's start is arbitrary)")
            }
        }

        /// The guide's player with its VBR branch (packet descriptions, the file's magic cookie
        /// copied to the queue) plays an AAC .m4a made by ffmpeg's command line tool; what
        /// jack_capture records holds ffmpeg's own decode of the file (which drops the 1024
        /// frames of encoder priming the file's edit list names), sample for sample.
        @Test func playsAnAACM4AFromFFmpegAsFFmpegDecodesIt() throws {
            try playsFFmpegsFileAsFFmpegDecodesIt("tones.m4a", codec: ["-c:a", "aac", "-b:a", "128k"], what: "AAC .m4a")
        }

        /// The same player, the same VBR branch, an MP3 made by ffmpeg with libmp3lame: the
        /// file opens as '.mp3' packets (no cookie), and what jack_capture records holds
        /// ffmpeg's decode of it (which drops the 1105 frames of delay the LAME header names).
        @Test func playsAnMP3FromFFmpegAsFFmpegDecodesIt() throws {
            try playsFFmpegsFileAsFFmpegDecodesIt("tones.mp3", codec: ["-c:a", "libmp3lame", "-b:a", "192k"], what: "MP3")
        }

        func playsFFmpegsFileAsFFmpegDecodesIt(_ name: String, codec: [String], what: String) throws {
            let scratch = try Scratch()
            let path = scratch.path(name)
            let reference = scratch.path("reference.raw")
            let ffmpeg = try tool("ffmpeg", package: "ffmpeg")
            let make = try runReferee([ffmpeg, "-v", "error", "-y", "-f", "lavfi", "-i",
                                       "aevalsrc=0.3*sin(2*PI*440*t)+0.1*sin(2*PI*(100+2000*t)*t)|0.3*sin(2*PI*660*t):s=48000:d=3"]
                                      + codec + [path])
            try #require(make.status == 0, "ffmpeg: \(make.error)")
            let decode = try runReferee([ffmpeg, "-v", "error", "-y", "-i", path, "-f", "f32le", "-c:a", "pcm_f32le", reference])
            try #require(decode.status == 0, "ffmpeg: \(decode.error)")
            let expected = try Data(contentsOf: URL(fileURLWithPath: reference)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            #expect(expected.count >= 2 * 3 * Self.rate)

            let server = try JackServer(sampleRate: Self.rate, periodFrames: 256)
            defer { server.stop() }
            let (jackCapture, capture, ports) = try startJackCapture(server, scratch: scratch, channels: 2)
            let play = try runProcess([try example("PlayFile"), path, "--device", ports], environment: server.environment, timeout: 30)
            #expect(play.status == 0, "PlayFile exited \(play.status): \(play.output)\(play.error)")
            jackCapture.send(SIGINT)
            #expect(jackCapture.waitForExit() == 0, "\(jackCapture.output)")
            // The float WAV read as it is (sox would pass the samples through 32-bit integers,
            // rounding the quietest ones).
            let recording = try floatWAVSamples(capture)
            checkFrames(server) {
                // Where ffmpeg's first frame is in the recording: PlayFile plays the priming too.
                let frames = recording.count / 2
                let head = 64
                let offset = (0..<max(0, frames - expected.count / 2 + 1)).first { f in
                    (0..<head * 2).allSatisfy { recording[f * 2 + $0] == expected[$0] }
                }
                guard let offset else {
                    Issue.record("ffmpeg's decode is nowhere in the \(frames)-frame recording")
                    return
                }
                let played = Array(recording[(offset * 2)..<(offset * 2 + expected.count)])
                let differing = zip(played, expected).filter { $0 != $1 }.count
                let firstDifference = played.indices.first { played[$0] != expected[$0] }.map { $0 / 2 }
                #expect(differing == 0, "\(differing) of \(expected.count) samples differ from ffmpeg's decode, from frame \(firstDifference ?? 0); jack_capture: \(jackCapture.output)")
                print("measured: PlayFile of ffmpeg's \(what) -> jack_capture: ffmpeg's decode found at frame \(offset), \(differing) samples differ")
            }
        }

        @Test func aMissingFileIsOneLineAndAFailure() throws {
            let scratch = try Scratch()
            let missing = scratch.path("missing.wav")
            let play = try runProcess([try example("PlayFile"), missing], timeout: 30)
            #expect(play.status != 0)
            #expect(play.error == "PlayFile: cannot open \(missing): no such file or directory (-43)\n")
        }

        @Test func aFileThatIsNoAudioIsOneLineAndAFailure() throws {
            let scratch = try Scratch()
            let text = scratch.path("notes.wav")
            try Data("not audio".utf8).write(to: URL(fileURLWithPath: text))
            let play = try runProcess([try example("PlayFile"), text], timeout: 30)
            #expect(play.status != 0)
            #expect(play.error == "PlayFile: cannot open \(text): not an audio file of a known type ('typ?')\n")
        }
    }
}

/// The samples of a 32-bit float WAV file (jack_capture's), interleaved.
func floatWAVSamples(_ path: String) throws -> [Float] {
    let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    func u32(_ i: Int) -> Int { Int(bytes[i]) | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2]) << 16 | Int(bytes[i + 3]) << 24 }
    var i = 12
    while i + 8 <= bytes.count {
        let size = u32(i + 4)
        if bytes[i..<(i + 4)].elementsEqual("data".utf8) {
            let end = min(bytes.count, i + 8 + size)
            return bytes[(i + 8)..<end].withUnsafeBytes { raw in
                (0..<(raw.count / 4)).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) }
            }
        }
        i += 8 + size + (size & 1)
    }
    throw CocoaError(.fileReadCorruptFile)
}
