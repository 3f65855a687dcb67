import Testing
import Foundation
import JackTestSupport
import RefereeTesting
import SoundFile

/// The peer tools as referees: jack_capture records what jaq plays; jaq records what they play.
@Suite(.serialized, .refereeCrashesAreKnownIssues) struct PeerTests {
    func channel(_ c: Int, of recording: (channels: Int, samples: [Float])) -> [Float] {
        stride(from: c, to: recording.samples.count, by: recording.channels).map { recording.samples[$0] }
    }

    /// Writes a 16-bit file: `pad` frames of silence, `frames` frames of a signal that never
    /// repeats and is never 0, `pad` frames of silence.
    func writeSignal16(_ path: String, frames: Int, channels: Int, pad: Int) throws -> [[Int16]] {
        let info = SoundFile.Info(sampleRate: 48000, channelCount: channels, format: SoundFile.Format(.wav, .pcm16))
        let file = try SoundFile(path: path, mode: .write, format: info)
        var signal = Array(repeating: [Int16](), count: channels)
        var samples = [Int16](repeating: 0, count: (frames + 2 * pad) * channels)
        for n in 0..<frames {
            for c in 0..<channels {
                var value = Int16(truncatingIfNeeded: (n &* 7919 &+ c &* 104_729) % 60_001 - 30_000)
                if value == 0 { value = 1 }
                signal[c].append(value)
                samples[(pad + n) * channels + c] = value
            }
        }
        _ = samples.withUnsafeBufferPointer { file.writeFrames($0) }
        try file.close()
        return signal
    }

    @Test(arguments: JackServer.Backend.allCases)
    func jackCaptureRecordsJaqPlayBitExactTailIncluded(backend: JackServer.Backend) throws {
        // jack_capture (a referee) crashing: the scenario again (withRefereeRetries).
        try withRefereeRetries {
            let server = try JackServer(backend: backend)
            defer { server.stop() }
            let dir = scratchDirectory("capture")
            defer { removeScratch(dir) }
            let signal = try writeSignal16("\(dir)/song.wav", frames: 3 * 48000 + 123, channels: 2, pad: 0)
            // jack_capture connects to the ports jaq makes before jaq plays: jaq starts on a frame
            // 4 s away (ample for two processes to start on a loaded machine).
            let (_, play) = try playAhead(["song.wav"], options: ["--quiet"], server: server, dir: dir, ports: "jaq-1-song:out_", count: 2)
            let capture = try server.spawn(["jack_capture", "--daemon", "-d", "8", "-c", "2", "--port", "jaq-1-song:out_1",
                                            "--port", "jaq-1-song:out_2", "\(dir)/captured.wav"], output: "\(dir)/capture.log")
            #expect(waitForExit(play) == 0)
            let captured = try waitForReferee(capture, tool: "jack_capture", timeout: 20, log: "\(dir)/capture.log")
            #expect(captured == 0)
            let recording = try readInterleaved("\(dir)/captured.wav", as: Float.self)
            // Under PipeWire a cycle that ran late can repeat or miss a period (Docs/queues.md); on a
            // loaded machine jackd drops a late client's period, and a starved player says which
            // frames it could not play.
            let xruns = server.xrunCount
            let playLog = (try? String(contentsOfFile: "\(dir)/play.log", encoding: .utf8)) ?? ""
            let lossReported = playLog.contains("frames not played")
            try withKnownIssue(Comment(rawValue: "the server logged \(xruns) late cycles; jaq play: \(playLog)"), isIntermittent: true) {
                for c in 0..<2 {
                    let got = channel(c, of: recording)
                    let first = try #require(got.firstIndex { $0 != 0 }, "channel \(c) has audio")
                    let expected = signal[c].map { Float($0) / 32768 }
                    #expect(got.count >= first + expected.count, "nothing missing at the end")
                    #expect(Array(got[first..<min(got.count, first + expected.count)]) == expected, "channel \(c) bit-exact")
                    #expect(got[min(got.count, first + expected.count)...].allSatisfy { $0 == 0 }, "nothing after the last frame")
                }
            } when: { xruns > 0 || lossReported }
        }
    }

    /// Impulse files: silence with one full-scale sample at frame `at`.
    func writeImpulse(_ path: String, at position: Int, frames: Int) throws {
        let info = SoundFile.Info(sampleRate: 48000, channelCount: 1, format: SoundFile.Format(.wav, .float))
        let file = try SoundFile(path: path, mode: .write, format: info)
        var samples = [Float](repeating: 0, count: frames)
        samples[position] = 1
        _ = samples.withUnsafeBufferPointer { file.writeFrames($0) }
        try file.close()
    }

    @Test func eightQueuesInTwoProcessesStartedForOneFrameAreAlignedToTheSample() throws {
        // jack_capture (a referee) crashing: the scenario again (withRefereeRetries).
        try withRefereeRetries {
            let server = try JackServer(capture: 2, playback: 8)
            defer { server.stop() }
            let dir = scratchDirectory("sync8")
            defer { removeScratch(dir) }
            for i in 1...8 { try writeImpulse("\(dir)/i\(i).wav", at: 1000, frames: 4800) }
            let capture = try server.spawn(["jack_capture", "--daemon", "-d", "12", "-c", "8", "--manual-connections",
                                            "\(dir)/captured.wav"], output: "\(dir)/capture.log")
            #expect(waitForPorts(server, containing: "jack_capture", count: 8) != nil)
            // A frame inside a period, 8 s away (two processes start on a loaded machine): both
            // processes start every queue on it.
            let at = try frameNow(server) + 2 * startLead + 77
            let first = try jaqInBackground(["play", "--quiet", "--at", "\(at)", "i1.wav", "i2.wav", "i3.wav", "i4.wav"],
                                            server: server, log: "\(dir)/a.log", directory: dir)
            let second = try jaqInBackground(["play", "--quiet", "--at", "\(at)", "i5.wav", "i6.wav", "i7.wav", "i8.wav"],
                                             server: server, log: "\(dir)/b.log", directory: dir)
            // Every queue's port under its final client name.
            for i in 0..<8 { #expect(waitForPorts(server, containing: "jaq-\(i % 4 + 1)-i\(i + 1):out_L") != nil) }
            // The players were ready before their frame, unless the machine took longer than the lead
            // to start them (then they played at once, and may be gone already).
            let ready = try frameNow(server)
            try withKnownIssue(Comment(rawValue: "players ready at frame \(ready) for \(at)"), isIntermittent: true) {
                let captureList = try server.run(["jack_lsp"]).split(separator: "\n").filter { $0.contains("jack_capture") }.map(String.init)
                #expect(captureList.count == 8)
                for (i, port) in PortsSorted(captureList).enumerated() {
                    try server.run(["jack_connect", "jaq-\(i % 4 + 1)-i\(i + 1):out_L", port])
                }
                #expect(waitForExit(first) == 0)
                #expect(waitForExit(second) == 0)
                let captured = try waitForReferee(capture, tool: "jack_capture", timeout: 20, log: "\(dir)/capture.log")
                #expect(captured == 0)
                let recording = try readInterleaved("\(dir)/captured.wav", as: Float.self)
                #expect(recording.channels == 8)
                let positions = (0..<8).map { c in channel(c, of: recording).firstIndex(of: 1) }
                #expect(positions.allSatisfy { $0 != nil }, "every impulse recorded: \(positions)")
                #expect(Set(positions).count == 1, "impulses on one frame: \(positions)")
            } when: { ready >= at }
        }
    }

    /// Writes a 16-bit file: `lead` frames of silence, the signal, `tail` frames of silence.
    func writePadded16(_ path: String, frames: Int, channels: Int, lead: Int, tail: Int) throws -> [[Float]] {
        let info = SoundFile.Info(sampleRate: 48000, channelCount: channels, format: SoundFile.Format(.wav, .pcm16))
        let file = try SoundFile(path: path, mode: .write, format: info)
        var signal = Array(repeating: [Float](), count: channels)
        var samples = [Int16](repeating: 0, count: (lead + frames + tail) * channels)
        for n in 0..<frames {
            for c in 0..<channels {
                var value = Int16(truncatingIfNeeded: (n &* 7919 &+ c &* 104_729) % 60_001 - 30_000)
                if value == 0 { value = 1 }
                signal[c].append(Float(value) / 32768)
                samples[(lead + n) * channels + c] = value
            }
        }
        _ = samples.withUnsafeBufferPointer { file.writeFrames($0) }
        try file.close()
        return signal
    }

    /// Where `signal` starts in `recorded` if it is there exactly (followed by `after` zeros); nil if not.
    func exactMatch(_ recorded: [Float], _ signal: [Float], zerosAfter after: Int) -> Int? {
        guard let first = recorded.firstIndex(where: { $0 != 0 }), recorded.count >= first + signal.count else { return nil }
        guard Array(recorded[first..<(first + signal.count)]) == signal else { return nil }
        let end = min(recorded.count, first + signal.count + after)
        return recorded[(first + signal.count)..<end].allSatisfy { $0 == 0 } ? first : nil
    }

    /// A peer plays a padded signal; `jaq record` and `jack_capture` record its ports at the same time.
    /// jaq's take must hold the signal bit-exact, tail included; where the peer itself glitches
    /// (jack_capture's recording differs from the file too), jaq's take must equal jack_capture's.
    func recordPeer(_ name: String, channels: Int, command: (String) -> [String], ports: String, client: String) throws {
        // jack_capture (a referee) crashing: the scenario again (withRefereeRetries).
        try withRefereeRetries {
            let server = try JackServer()
            defer { server.stop() }
            let dir = scratchDirectory("peer-\(name)")
            defer { removeScratch(dir) }
            let signal = try writePadded16("\(dir)/source.wav", frames: 2 * 48000, channels: channels, lead: 48000, tail: 24000)
            var environment = server.environment
            environment["JACK_NO_START_SERVER"] = "1"
            let peer = Process()
            peer.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            peer.arguments = command("\(dir)/source.wav")
            peer.environment = environment
            peer.standardInput = FileHandle.nullDevice
            peer.standardOutput = FileHandle.nullDevice
            peer.standardError = FileHandle.nullDevice
            try peer.run()
            #expect(waitForPorts(server, containing: client, count: channels) != nil, "\(name)'s ports")
            let list = try server.run(["jack_lsp"]).split(separator: "\n").map(String.init)
            let regex = try Regex(ports)
            let peerPorts = PortsSorted(list.filter { (try? regex.firstMatch(in: $0)) != nil })
            let record = try jaqInBackground(["record", "--quiet", "-b", "float", "-d", "3.6", "-o", "take-{n}.wav", ports],
                                             server: server, log: "\(dir)/record.log", directory: dir)
            let capture = try server.spawn(["jack_capture", "-d", "3.6", "-dc"] + peerPorts.flatMap { ["-p", $0] } + ["\(dir)/captured.wav"],
                                           output: "\(dir)/capture.log")
            #expect(waitForExit(record, timeout: 30) == 0, "\((try? String(contentsOfFile: "\(dir)/record.log", encoding: .utf8)) ?? "")")
            try waitForReferee(capture, tool: "jack_capture", timeout: 30, log: "\(dir)/capture.log")
            waitForExit(peer, timeout: 30)
            let captured = try readInterleaved("\(dir)/captured.wav", as: Float.self)
            for c in 0..<channels {
                let take = try readInterleaved("\(dir)/take-0\(c + 1).wav", as: Float.self).samples
                let reference = channel(c, of: captured)
                if exactMatch(take, signal[c], zerosAfter: 20000) != nil { continue }
                // Not the file: then the peer played something else, and jaq must have recorded it as jack_capture did.
                exactUnlessCyclesRanLate(server, "\(name) channel \(c)") {
                    #expect(exactMatch(reference, signal[c], zerosAfter: 20000) == nil, "\(name) channel \(c): jack_capture has the file, jaq does not")
                    let a = take.firstIndex { $0 != 0 } ?? 0, b = reference.firstIndex { $0 != 0 } ?? 0
                    let common = min(take.count - a, reference.count - b, signal[c].count)
                    let firstDifference = (0..<common).first { take[a + $0] != reference[b + $0] }
                    #expect(firstDifference == nil, "\(name) channel \(c): jaq differs from jack_capture from frame \(firstDifference ?? -1) of \(common)")
                }
                print("note: \(name) channel \(c) differs from its file in jaq's recording (the player's own glitch, or a late cycle)")
            }
        }
    }

    @Test func jaqRecordRecordsJackPlayBitExact() throws {
        // jack-play's -c 3 is its zero-order-hold converter: exact at equal rates (its default is not).
        try recordPeer("jack-play", channels: 3, command: { ["jack-play", "-c", "3", "-b", "512", $0] }, ports: "jack-play-[0-9]+:out_", client: "jack-play-")
    }

    @Test func jaqRecordRecordsSndfileJackplayBitExact() throws {
        try recordPeer("sndfile-jackplay", channels: 2, command: { ["sndfile-jackplay", $0] }, ports: "jackplay:out_", client: "jackplay:out_")
    }

    @Test func jaqRecordRecordsEcasoundBitExact() throws {
        try recordPeer("ecasound", channels: 3, command: { ["ecasound", "-q", "-f:f32,3,48000", "-i", $0, "-o", "jack"] }, ports: "ecasound:out_", client: "ecasound:out_")
    }

    /// jack_capture's ports in natural order (…_2 before …_10).
    func PortsSorted(_ names: [String]) -> [String] {
        names.sorted { a, b in
            let x = Int(a.split(separator: "_").last ?? "") ?? 0
            let y = Int(b.split(separator: "_").last ?? "") ?? 0
            return x < y
        }
    }
}
