import Foundation
import JackTestSupport
import Testing

extension ExamplesTests {
    /// Every frame of a file reaches JACK, the last one included, when a player stops the way the
    /// playing-audio guide does: Stop(false) in the callback that finds the end of the file, the
    /// run loop for one more second, then Dispose(true). The files end on noise, not on silence
    /// that would hide a lost tail. jack_capture is the referee.
    @Suite struct LastFrameTests {
        static let rate = 48000
        static let seconds = 3

        enum Player: String, CaseIterable, CustomTestStringConvertible {
            /// The guide's Listings 3-1 to 3-18 as printed (Sources/Examples/player-c/player.cpp).
            case guide
            /// The Swift port (Sources/Examples/PlayFile).
            case playFile
            /// `jaq play`.
            case jaqPlay
            var testDescription: String { rawValue }
        }

        /// What is played. The guide's DeriveBufferSize caps a buffer at 0x50000 bytes, so the
        /// 16-channel float file gets 5120-frame buffers (0.107 s) where the stereo one gets 0.5 s.
        enum Material: String, CaseIterable, CustomTestStringConvertible {
            case stereoInt16
            case sixteenChannelFloat
            var channels: Int { self == .stereoInt16 ? 2 : 16 }
            var testDescription: String { rawValue }
        }

        @Test(arguments: Player.allCases, Material.allCases)
        func everyFrameReachesJACK(player: Player, material: Material) throws {
            let scratch = try Scratch()
            let channels = material.channels
            let source = noise(frames: Self.seconds * Self.rate, channels: channels)
            // noise() is never 0: the file ends on a non-zero frame.
            #expect(source.suffix(channels).allSatisfy { $0 != 0 })
            let path = scratch.path("take.wav")
            switch material {
            case .stereoInt16: try writeWAV(path, source, channels: channels, rate: Self.rate)
            case .sixteenChannelFloat: try writeFloatWAV(path, source.map { Float($0) / 32768 }, channels: channels, rate: Self.rate)
            }

            let server = try JackServer(sampleRate: Self.rate, periodFrames: 256)
            defer { server.stop() }
            let (jackCapture, capture, ports) = try startJackCapture(server, scratch: scratch, channels: channels)

            var environment = childEnvironment(server)
            let command: [String]
            switch player {
            case .guide:
                let program = scratch.path("player")
                let build = try GuidePlayer.compile(into: program)
                try #require(build.status == 0, "c++ failed:\n\(build.diagnostics)")
                // The guide's player never sets CurrentDevice: the default device is routed.
                environment["JAQ_OUTPUT_DEVICE"] = ports
                command = [program, path]
            case .playFile:
                command = [try example("PlayFile"), path, "--device", ports]
            case .jaqPlay:
                command = [try example("jaq"), "play", "--quiet", "--to", ports, path]
            }
            let play = try runProcess(command, environment: environment, timeout: 60)
            #expect(play.status == 0, "\(player) exited \(play.status): \(play.output)\(play.error)")
            jackCapture.send(SIGINT)
            #expect(jackCapture.waitForExit() == 0, "\(jackCapture.output)")

            let recording = try soxFloat(capture, scratch: scratch)
            checkFrames(server) {
                guard let offset = locate(source.map { Float($0) / 32768 }, in: recording, channels: channels) else { return }
                print("measured: \(player) \(material): all \(source.count / channels) frames, the last included, at capture frame \(offset)")
            }
        }
    }
}

/// Builds Sources/Examples/player-c/player.cpp (the guide's player as printed; the guide's code
/// is C++) with `c++ -Wall` against the headers and libAudioToolbox.so.
enum GuidePlayer {
    static func compile(into output: String) throws -> (status: Int32, diagnostics: String) {
        let libraries = try CRecorder.libraryDirectory()
        let result = try runProcess([
            try tool("c++", package: "g++"), "-Wall", "-Wno-deprecated-declarations",
            packageRoot.appendingPathComponent("Sources/Examples/player-c/player.cpp").path,
            "-I", packageRoot.appendingPathComponent("Sources/CAudioToolbox/include").path,
            "-L", libraries, "-lAudioToolbox", "-Wl,-rpath,\(libraries):/opt/swift/usr/lib/swift/linux",
            "-o", output,
        ])
        return (result.status, result.error)
    }
}
