import Foundation
import JackTestSupport
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
            let path = scratch.file("noise.wav")
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

        @Test func aMissingFileIsOneLineAndAFailure() throws {
            let scratch = try Scratch()
            let missing = scratch.file("missing.wav")
            let play = try runProcess([try example("PlayFile"), missing], timeout: 30)
            #expect(play.status != 0)
            #expect(play.error == "PlayFile: cannot open \(missing): no such file or directory (-43)\n")
        }

        @Test func aFileThatIsNoAudioIsOneLineAndAFailure() throws {
            let scratch = try Scratch()
            let text = scratch.file("notes.wav")
            try Data("not audio".utf8).write(to: URL(fileURLWithPath: text))
            let play = try runProcess([try example("PlayFile"), text], timeout: 30)
            #expect(play.status != 0)
            #expect(play.error == "PlayFile: cannot open \(text): not an audio file of a known type ('typ?')\n")
        }
    }
}
