import AudioToolbox
import Foundation
import JackTestSupport
import Testing
@testable import jaq

/// Where a take's first sample belongs (TakePlace), without a server: which timeline, the
/// pre-roll, a file rate other than the server's, a position before frame 0.
struct TakePlaceTests {
    @Test func onJackFramesTheFirstSampleIsItsFrame() {
        let place = TakePlace.of(firstDeviceFrame: 4_800_000, transport: nil, deviceRate: 48000, fileRate: 48000)
        #expect(place == TakePlace(timeline: .jackFrames, samples: 4_800_000))
    }

    @Test func onTheTransportTheFirstSampleIsTheTransportsFrameThen() {
        // The transport was at 480000 on device frame 1000000: 500 frames later it is at 480500.
        let place = TakePlace.of(firstDeviceFrame: 1_000_500, transport: (1_000_000, 480_000), deviceRate: 48000, fileRate: 48000)
        #expect(place == TakePlace(timeline: .transport, samples: 480_500))
        // A pre-roll starts the take before the roll.
        let preroll = TakePlace.of(firstDeviceFrame: 1_000_000 - 12000, transport: (1_000_000, 480_000), deviceRate: 48000, fileRate: 48000)
        #expect(preroll.samples == 468_000)
    }

    @Test func withAMastersClockTheFrameIsTheMasters() {
        // --at 5000000 --clock PORT: the master's frame 5000000 is this server's 1200000; the
        // pre-roll's first sample, 4800 frames before, is the master's 4995200.
        let place = TakePlace.of(firstDeviceFrame: 1_195_200, transport: nil, masterOffset: 5_000_000 - 1_200_000,
                                 deviceRate: 48000, fileRate: 48000)
        #expect(place == TakePlace(timeline: .masterFrames, samples: 4_995_200))
        #expect(place.description == "the master's JACK frame 4995200")
    }

    @Test func aPositionBeforeZeroIsWrittenAsZeroAndSaidSo() {
        let place = TakePlace.of(firstDeviceFrame: 1_000_000 - 24000, transport: (1_000_000, 12000), deviceRate: 48000, fileRate: 48000)
        #expect(place.samples == 0 && place.clampedToZero)
        #expect(place.description.contains("written as 0"))
    }

    @Test func samplesCountAtTheFilesRate() {
        // A 44.1 kHz take on a 48 kHz server: 96000 server frames are 88200 of the file's samples.
        let place = TakePlace.of(firstDeviceFrame: 96000, transport: nil, deviceRate: 48000, fileRate: 44100)
        #expect(place.samples == 88200)
    }

    @Test func eachFileNamesItsPortsAndJaq() throws {
        let format = try AudioTakeFile.Format(name: "wav", bits: "24")
        let dir = scratchDirectory("takeplace")
        defer { removeScratch(dir) }
        let files = try (0..<2).map {
            TakeFile(take: try AudioTakeFile(path: "\(dir)/t\($0).wav", format: format, sampleRate: 48000, channelCount: 1), channels: [$0])
        }
        let place = TakePlace(timeline: .transport, samples: 96000)
        // 2026-11-27 12:34:56 UTC, shown in local time.
        let chunks = place.broadcastWaves(files: files, sources: ["system:capture_1", "system:capture_2"], format: format, rate: 48000,
                                          now: 1_795_790_096)
        #expect(chunks.count == 2)
        #expect(chunks[1].description.contains("system:capture_2") && chunks[1].description.contains("transport"))
        #expect(chunks.allSatisfy { $0.timeReference == 96000 && $0.originator == "jaq \(jaqVersion)" })
        #expect(chunks[0].codingHistory == "A=PCM,F=48000,W=24,M=mono,T=jaq \(jaqVersion)")
        #expect(chunks[0].originationDate.count == 10 && chunks[0].originationTime.count == 8)
        #expect(chunks[0].originatorReference != chunks[1].originatorReference && chunks[0].originatorReference.utf8.count <= 32)
    }
}

/// Takes that know their place (Docs/cli.md): every WAV and RF64 take carries a Broadcast Wave
/// chunk whose time reference ffprobe (FFmpeg's reader, as DAWs and tools read it) finds: the
/// `--at` frame, the pre-roll before it, the transport's frame for a `--transport` take, the
/// rolling transport's frame for any other; `jaq info` shows it; other containers carry none
/// and record as before.
@Suite(.serialized) struct TakeTimeReferenceTests {
    func timeReference(_ path: String) throws -> UInt64? {
        let probe = try runReferee(["/usr/bin/ffprobe", "-v", "error", "-show_entries", "format_tags=time_reference",
                                    "-of", "default=nw=1:nk=1", path])
        try #require(probe.status == 0, "ffprobe \(path): \(probe.error)")
        return UInt64(probe.output.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func anAtTakesTimeReferenceIsItsFrameLessThePreRoll() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("bwf-at")
        defer { removeScratch(dir) }
        let at = try frameNow(server) + 48000
        let wav = try jaq(["record", "--at", "\(at)", "-d", "0.2", "-o", "at-{n}.wav", "system"], server: server, directory: dir)
        try #require(wav.status == 0, "\(wav.error)")
        #expect(wav.error.contains("time reference: JACK frame \(at)"), "\(wav.error)")
        for track in ["at-01.wav", "at-02.wav"] {
            #expect(try timeReference("\(dir)/\(track)") == UInt64(at), "\(track)")
        }
        // The chunk says who wrote it, from which port.
        let tags = try runReferee(["/usr/bin/ffprobe", "-v", "error", "-show_entries", "format_tags", "-of", "default=nw=1",
                                   "\(dir)/at-02.wav"]).output
        #expect(tags.contains("encoded_by=jaq \(jaqVersion)") && tags.contains("system:capture_2"), "\(tags)")

        // RF64, with 0.25 s of pre-roll: the first sample is 12000 frames before --at.
        let later = try frameNow(server) + 48000
        let rf64 = try jaq(["record", "--at", "\(later)", "--pre-roll", "0.25", "-d", "0.2", "-f", "rf64", "-o", "pre-{n}.rf64",
                            "system:capture_1"], server: server, directory: dir)
        try #require(rf64.status == 0, "\(rf64.error)")
        #expect(try timeReference("\(dir)/pre-01.rf64") == UInt64(later - 12000))

        // jaq info shows it.
        let info = try jaq(["info", "at-01.wav"], server: nil, directory: dir)
        #expect(info.output.contains("time ref:    \(at) samples") && info.output.contains("written by jaq"), "\(info.output)")
        let json = try jaq(["info", "--json", "at-01.wav"], server: nil, directory: dir)
        #expect(json.output.contains("\"timeReference\" : \(at)"), "\(json.output)")
    }

    @Test func aTransportTakesTimeReferenceIsTheLocatePositionAndARollingTransportsFrameOtherwise() throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("bwf-transport")
        defer { removeScratch(dir) }
        #expect(try jaq(["transport", "stop"], server: server).status == 0)
        #expect(try jaq(["transport", "locate", "480000"], server: server).status == 0)
        let record = try jaqInBackground(["record", "--transport", "-d", "0.3", "-o", "roll-{n}.wav", "system"],
                                         server: server, log: "\(dir)/roll.log", directory: dir)
        let armed = Date().addingTimeInterval(20)
        while !(try String(contentsOfFile: "\(dir)/roll.log", encoding: .utf8)).contains("waiting for JACK transport"), Date() < armed {
            usleep(20_000)
        }
        #expect(try jaq(["transport", "start"], server: server).status == 0)
        #expect(waitForExit(record, timeout: 20) == 0)
        let log = try String(contentsOfFile: "\(dir)/roll.log", encoding: .utf8)
        #expect(try timeReference("\(dir)/roll-01.wav") == 480000, "\(log)")
        #expect(log.contains("time reference: transport frame 480000"), "\(log)")

        // The transport still rolls: a take at a JACK frame is placed on the transport's frames.
        let rolled = try #require(frame(after: "transport rolling at JACK frame", in: log), "\(log)")
        let at = try frameNow(server) + 24000
        let take = try jaq(["record", "--at", "\(at)", "-d", "0.2", "-o", "at-{n}.wav", "system"], server: server, directory: dir)
        try #require(take.status == 0, "\(take.error)")
        #expect(take.error.contains("time reference: transport frame"), "\(take.error)")
        let found = try timeReference("\(dir)/at-01.wav")
        #expect(found == UInt64(480000 + at - rolled), "rolled at JACK frame \(rolled), --at \(at): \(found.map(String.init) ?? "none") (\(Int64(found ?? 0) - (480000 + at - rolled)) off)")
        #expect(try jaq(["transport", "stop"], server: server).status == 0)
    }

    @Test(arguments: ["flac", "w64"])
    func aContainerWithoutBroadcastWaveRecordsAndSaysSo(_ format: String) throws {
        let server = try JackServer()
        defer { server.stop() }
        let dir = scratchDirectory("bwf-\(format)")
        defer { removeScratch(dir) }
        let take = try jaq(["record", "-d", "0.2", "-f", format, "-o", "take-{n}.\(format)", "system:capture_1"], server: server, directory: dir)
        try #require(take.status == 0, "\(take.error)")
        #expect(take.error.contains("not stored: \(format) files carry no Broadcast Wave chunk"), "\(take.error)")
        #expect(try timeReference("\(dir)/take-01.\(format)") == nil)
        let info = try jaq(["info", "take-01.\(format)"], server: nil, directory: dir)
        #expect(info.status == 0 && !info.output.contains("time ref"), "\(info.output)")
    }
}
