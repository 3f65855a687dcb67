import Foundation
import JackTestSupport
import Testing

extension ExamplesTests {
    /// RecordFile, the recording-audio guide's recorder, on a private server while a known
    /// signal is played into its ports.
    @Suite struct RecordFileTests {
        /// Starts RecordFile in the background and waits for its "recording" line: its queue runs.
        func startRecordFile(_ arguments: [String], server: JackServer, scratch: Scratch) throws -> Background {
            let recordFile = try Background(try example("RecordFile"), arguments, environment: childEnvironment(server),
                                            log: scratch.path("RecordFile.log"))
            try #require(waitUntil(10) { recordFile.output.contains(": recording ") || !recordFile.isRunning },
                         "RecordFile did not start recording: \(recordFile.output)")
            try #require(recordFile.isRunning, "RecordFile exited: \(recordFile.output)")
            return recordFile
        }

        @Test func sixtySecondsFromOurOutputQueueInFreewheelAreRecordedBitExact() throws {
            // Listing 2-8's format: 16-bit stereo big-endian AIFF at 44100 Hz, the server's rate here.
            let rate = 44100
            let scratch = try Scratch()
            let source = noise(frames: 60 * rate, channels: 2)
            let server = try JackServer(sampleRate: rate, periodFrames: 256)
            defer { server.stop() }  // ends the freewheel too: never `jack_freewheel n` (jackd 1.9.21 hangs)
            try withQueues(on: server) {
                let player = try QueuePlayer(server: server, source: source, channels: 2, rate: Double(rate), name: "examples-player")
                defer { player.dispose() }
                let launched = player.deviceFrameNow
                let take = scratch.path("take.aif")
                let recordFile = try startRecordFile([take, "600", "--device", player.ports], server: server, scratch: scratch)

                // Freewheel: cycles run as fast as the clients allow, and queues wait rather than drop.
                let clock = Date()
                try server.run(["jack_freewheel", "y"])
                try player.start()
                try #require(player.waitUntilPlayed(timeout: 120), "the output queue did not play out")
                // RecordFile has everything once its file reaches the frame where the player ended
                // (it started recording after `launched`); then Ctrl-C stops it.
                let end = player.startDeviceFrame + Int64(source.count / 2)
                #expect(waitUntil(60) { fileSize(take) >= Int(end - launched) * 4 + 4096 }, "RecordFile fell behind")
                print("measured: 60 s played and recorded in freewheel in \(String(format: "%.1f", Date().timeIntervalSince(clock))) s")
                recordFile.send(SIGINT)
                #expect(recordFile.waitForExit() == 0, "\(recordFile.output)")

                let info = try soxi(take)
                #expect(info.type == "aiff" && info.rate == "\(rate)" && info.channels == "2" && info.bits == "16"
                        && info.encoding == "Signed Integer PCM", "\(info)")
                let recording = try soxInt16(take, scratch: scratch)
                guard let offset = locate(source, in: recording, channels: 2) else { return }
                let recordStart = try #require(number(after: "from device frame ", in: recordFile.output), "\(recordFile.output)")
                // Latency: the JACK frame where RecordFile got the first frame, minus where the queue played it.
                let latency = recordStart + Int64(offset) - player.startDeviceFrame
                print("measured: output queue -> RecordFile: latency \(latency) frames (first frame at file frame \(offset))")
                #expect(latency == 0)
            }
        }

        @Test func jackPlayIsRecordedAtTheServersRateFrameForFrame() throws {
            // --rate 0: the server's rate, which Listing 2-10 reads back from the queue. A period
            // of 1024 frames leaves the peer room on a loaded machine.
            let rate = 48000
            let scratch = try Scratch()
            let source = noise(frames: 5 * rate, channels: 3)
            let file = scratch.path("three.wav")
            try writeWAV(file, source, channels: 3, rate: rate)
            let server = try JackServer(sampleRate: rate, periodFrames: 1024)
            defer { server.stop() }
            let take = scratch.path("take.aif")
            let recordFile = try startRecordFile([take, "600", "--rate", "0", "--device", ""], server: server, scratch: scratch)
            #expect(recordFile.output.contains("48000 Hz"), "\(recordFile.output)")

            // jack-play plays the three channels; the first two go to RecordFile. -c 3 is its
            // zero-order-hold converter (an exact one; -c is not a channel count), -b its ring.
            var environment = childEnvironment(server)
            environment["JACK_PLAY_CONNECT_TO"] = "RecordFile-in:in_%d"
            let jackPlay = try Background(try tool("jack-play", package: "jack-tools"), ["-c", "3", "-b", "2048", file],
                                          environment: environment, log: scratch.path("jack-play.log"))
            #expect(jackPlay.waitForExit(timeout: 30) == 0, "\(jackPlay.output)")
            recordFile.send(SIGINT)
            #expect(recordFile.waitForExit() == 0, "\(recordFile.output)")

            #expect(try soxi(take).rate == "\(rate)")
            let recording = try soxInt16(take, scratch: scratch)
            checkFrames(server) {
                guard let (shift, runs) = locateRuns(source, sourceChannels: 3, in: recording, channels: 2) else { return }
                // jack-play's own losses (see Docs/examples.md): it connects its ports one per cycle
                // after it has started playing, so channel k misses its first k periods or so, and it
                // never plays the last (ring - 255) frames. Every frame it did play is in the file, in place.
                for (channel, run) in runs.enumerated() {
                    #expect(run.lowerBound < rate / 10, "channel \(channel) starts at source frame \(run.lowerBound)")
                    #expect(run.upperBound > source.count / 3 - 4096, "channel \(channel) ends at source frame \(run.upperBound)")
                }
                print("measured: jack-play -> RecordFile: source frame 0 at file frame \(shift); channels hold source frames \(runs)")
            }
        }

        @Test func anUnwritablePathIsOneLineAndAFailure() throws {
            let scratch = try Scratch()
            let server = try JackServer(sampleRate: 48000, periodFrames: 256)
            defer { server.stop() }
            let missingDirectory = scratch.path("no such directory/take.aif")
            let record = try runProcess([try example("RecordFile"), missingDirectory, "1"],
                                        environment: childEnvironment(server), timeout: 30)
            #expect(record.status != 0)
            #expect(record.error == "RecordFile: cannot create \(missingDirectory): no such file or directory (-43)\n")

            let underAFile = scratch.path("notes.txt/take.aif")
            try Data("text".utf8).write(to: URL(fileURLWithPath: scratch.path("notes.txt")))
            let again = try runProcess([try example("RecordFile"), underAFile, "1"], environment: childEnvironment(server), timeout: 30)
            #expect(again.status != 0)
            #expect(again.error.hasPrefix("RecordFile: cannot create \(underAFile): ") && again.error.split(separator: "\n").count == 1,
                    "\(again.error)")
        }
    }
}
