import AudioCodec
import AudioToolbox
import Foundation
import Testing
import JackTestSupport
import RefereeTesting

/// AudioFileStream: files made by ffmpeg (and jaq), fed whole, in 1500-byte chunks and one
/// byte at a time, give the same properties and the packets ffprobe lists, byte for byte;
/// their packets decode through AudioConverter as ffmpeg decodes the file; Seek gives the
/// packet's byte offset, and parsing from there gives the packet.
@Suite(.refereeCrashesAreKnownIssues) struct AudioFileStreamTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let codec: [String]
        var rate = 44100
        var channels = 2
        let fileType: AudioFileTypeID
        let formatID: AudioFormatID
        /// Bytes ffprobe counts in a packet before ours (the ADTS header).
        var probeSkip = 0
        /// For PCM: ffmpeg's raw format of the same samples (the packets are these bytes).
        var raw: String?
        /// Whether the packet table (priming) says where ffmpeg's decode starts.
        var trims = false
        var testDescription: String { name }
    }

    static let cases = [
        Case(name: "adts.aac", codec: ["-c:a", "aac", "-b:a", "128k"], fileType: kAudioFileAAC_ADTSType, formatID: kAudioFormatMPEG4AAC, probeSkip: 7),
        Case(name: "id3-xing.mp3", codec: ["-c:a", "libmp3lame", "-b:a", "192k"], rate: 48000, fileType: kAudioFileMP3Type,
             formatID: kAudioFormatMPEGLayer3, trims: true),
        Case(name: "bare-vbr.mp3", codec: ["-c:a", "libmp3lame", "-q:a", "4", "-write_xing", "0", "-id3v2_version", "0"], rate: 22050, channels: 1,
             fileType: kAudioFileMP3Type, formatID: kAudioFormatMPEGLayer3),
        Case(name: "faststart.m4a", codec: ["-c:a", "aac", "-b:a", "128k", "-movflags", "+faststart"], fileType: kAudioFileM4AType,
             formatID: kAudioFormatMPEG4AAC, trims: true),
        Case(name: "alac.m4a", codec: ["-c:a", "alac", "-movflags", "+faststart"], fileType: kAudioFileM4AType, formatID: kAudioFormatAppleLossless),
        Case(name: "s16.wav", codec: ["-c:a", "pcm_s16le"], fileType: kAudioFileWAVEType, formatID: kAudioFormatLinearPCM, raw: "s16le"),
        Case(name: "f32.wav", codec: ["-c:a", "pcm_f32le"], rate: 48000, channels: 1, fileType: kAudioFileWAVEType, formatID: kAudioFormatLinearPCM, raw: "f32le"),
        Case(name: "s24.aiff", codec: ["-c:a", "pcm_s24be"], fileType: kAudioFileAIFFType, formatID: kAudioFormatLinearPCM, raw: "s24be"),
        Case(name: "sowt.aifc", codec: ["-c:a", "pcm_s16le", "-f", "aiff"], fileType: kAudioFileAIFCType, formatID: kAudioFormatLinearPCM, raw: "s16le"),
        Case(name: "s16.caf", codec: ["-c:a", "pcm_s16be"], fileType: kAudioFileCAFType, formatID: kAudioFormatLinearPCM, raw: "s16be"),
        // ffmpeg writes the packet table after the data; afconvert before it (moved there here).
        Case(name: "alac-pakt-first.caf", codec: ["-c:a", "alac"], fileType: kAudioFileCAFType, formatID: kAudioFormatAppleLossless),
    ]

    func ffmpeg(_ arguments: [String]) throws -> Data {
        let result = try runReferee(try #require(tool("ffmpeg")), ["-nostdin", "-v", "error", "-y"] + arguments)
        #expect(result.status == 0, "ffmpeg \(arguments.joined(separator: " ")): \(result.stderr)")
        return result.stdout
    }

    /// Two tones and noise, 1.5 s, encoded by ffmpeg into `name` (CAF files of packets get their
    /// packet table moved before the data, as afconvert writes it).
    func makeFile(_ c: Case) throws -> String {
        let path = scratch.path(c.name)
        _ = try ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=\(c.rate):duration=1.5",
                        "-f", "lavfi", "-i", "anoisesrc=r=\(c.rate):a=0.1:d=1.5:seed=7",
                        "-filter_complex", "amix=inputs=2,aformat=channel_layouts=\(c.channels == 1 ? "mono" : "stereo")"]
                       + c.codec + [path])
        if c.name.hasSuffix(".caf"), c.raw == nil {
            let moved = try Self.packetTableFirst(Array(Data(contentsOf: URL(fileURLWithPath: path))))
            try Data(moved).write(to: URL(fileURLWithPath: path))
        }
        return path
    }

    /// A CAF file with its 'data' chunk moved after every other chunk.
    static func packetTableFirst(_ file: [UInt8]) throws -> [UInt8] {
        var chunks: [[UInt8]] = []
        var data: [UInt8] = []
        var i = 8
        while i + 12 <= file.count {
            let size = Int(file[(i + 4)..<(i + 12)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            let chunk = Array(file[i..<min(i + 12 + size, file.count)])
            if chunk.starts(with: Array("data".utf8)) { data = chunk } else { chunks.append(chunk) }
            i += 12 + size
        }
        try #require(!data.isEmpty && chunks.contains { $0.starts(with: Array("pakt".utf8)) }, "a CAF file with 'data' and 'pakt'")
        return Array(file[0..<8]) + chunks.joined() + data
    }

    @Test(arguments: cases)
    func wholeChunkedAndByteAtATimeGiveTheSamePropertiesAndPackets(_ c: Case) throws {
        let path = try makeFile(c)
        let file = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let whole = AFS.parse(file, chunk: file.count)
        expectStatus(whole.status, noErr, "\(c.name) whole")
        let chunked = AFS.parse(file, chunk: 1500)
        let bytewise = AFS.parse(file, chunk: 1)
        expectStatus(chunked.status, noErr, "\(c.name) in 1500-byte chunks")
        expectStatus(bytewise.status, noErr, "\(c.name) a byte at a time")
        #expect(chunked.properties == whole.properties, "1500-byte chunks: \(chunked.properties)\nwhole: \(whole.properties)")
        #expect(bytewise.properties == whole.properties, "bytes: \(bytewise.properties)\nwhole: \(whole.properties)")
        #expect(chunked.capture.packets == whole.capture.packets && bytewise.capture.packets == whole.capture.packets,
                "\(whole.capture.packets.count) packets whole, \(chunked.capture.packets.count) chunked, \(bytewise.capture.packets.count) a byte at a time")
        #expect(whole.capture.properties.last == kAudioFileStreamProperty_ReadyToProducePackets || !whole.capture.properties.isEmpty)
        #expect(whole.capture.properties.contains(kAudioFileStreamProperty_ReadyToProducePackets))
        #expect(whole.capture.descriptionsOutside == 0)

        let p = whole.properties
        #expect(p.fileFormat == c.fileType, "file type \(p.fileFormat.map { fourCharacterCode($0) } ?? "none")")
        let format = try #require(whole.capture.formatAtReady, "DataFormat is known in the listener at ReadyToProducePackets")
        #expect(format.mFormatID == c.formatID && format.mSampleRate == Double(c.rate) && format.mChannelsPerFrame == UInt32(c.channels), "\(format)")
        #expect(p.formatList == 1)
        try sameAsAudioFile(path, format: format, properties: p, packetCount: whole.capture.packets.count)
        let packets = whole.capture.packets
        let totalBytes = packets.reduce(0) { $0 + $1.count }
        let dataOffset = try #require(p.dataOffset)
        if let raw = c.raw {
            // PCM: NULL descriptions, and the packets are the file's samples.
            #expect(whole.capture.callbacksWithoutDescriptions == whole.capture.callbacks)
            let samples = Array(try ffmpeg(["-i", path, "-c:a", "copy", "-f", raw, "-"]))
            #expect(packets.joined().elementsEqual(samples), "\(totalBytes) bytes parsed, ffmpeg gives \(samples.count)")
            #expect(p.byteCount == UInt64(totalBytes) && p.packetCount == UInt64(packets.count))
            #expect(Array(file[Int(dataOffset)..<Int(dataOffset) + totalBytes]) == Array(packets.joined()))
            #expect(packets.allSatisfy { $0.count == Int(format.mBytesPerFrame) })
            let seekCapture = StreamCapture()
            let stream = try #require(AFS.open(seekCapture))
            defer { AudioFileStreamClose(stream) }
            AFS.feed(stream, Array(file.prefix(Int(dataOffset) + 100)), chunk: 1500)
            var byteOffset: Int64 = -1
            var flags: AudioFileStreamSeekFlags = []
            expectStatus(AudioFileStreamSeek(stream, 1000, &byteOffset, &flags), noErr, "seek")
            #expect(byteOffset == 1000 * Int64(format.mBytesPerFrame) && flags.rawValue == 0)
            return
        }
        // Packets: ffprobe's, byte for byte at its offsets.
        #expect(whole.capture.callbacksWithoutDescriptions == 0)
        let probed = try AFS.probePositions(path)
        #expect(packets.count == probed.count, "\(packets.count) packets, ffprobe lists \(probed.count)")
        let differing = zip(packets, probed).enumerated().first { _, pair in
            pair.0 != Array(file[(pair.1.pos + c.probeSkip)..<(pair.1.pos + pair.1.size)])
        }
        #expect(differing == nil, "packet \(differing?.offset ?? -1) differs from ffprobe's")
        #expect(Int64(probed.first?.pos ?? -1) == dataOffset, "DataOffset \(dataOffset), ffprobe's first packet at \(probed.first?.pos ?? -1)")
        if let count = p.packetCount { #expect(count == UInt64(packets.count)) }
        if let byteCount = p.byteCount { #expect(byteCount == UInt64(totalBytes), "AudioDataByteCount \(byteCount), packets hold \(totalBytes)") }
        let average = AFS.value(whole.capture.stream, kAudioFileStreamProperty_AverageBytesPerPacket, Double.self)
        #expect(average.0 == kAudio_ParamError, "the stream is closed")
        #expect(abs(AFS.averageBytesPerPacket(file) - Double(totalBytes) / Double(packets.count)) < 0.5)
        #expect(p.maximumPacketSize == UInt32(packets.map(\.count).max() ?? 0))
        #expect((p.upperBound ?? 0) >= p.maximumPacketSize ?? UInt32.max)
        #expect(p.bitRate.map { $0 > 8000 } ?? false)
        if c.formatID == kAudioFormatMPEG4AAC { #expect(p.cookie != nil, "an AAC stream has a magic cookie") }
        if c.trims { #expect(p.packetTable != nil, "the packet table gives the priming") }

        try decodesAsFFmpegDoes(c, path: path, packets: packets, format: format, properties: p)
        try seeksToPackets(file, probed: probed, dataOffset: dataOffset, packets: packets, countKnown: p.packetCount != nil)
    }

    /// AudioFileOpenURL on the same file says the same: data format, packet count, priming.
    func sameAsAudioFile(_ path: String, format: AudioStreamBasicDescription, properties p: StreamProperties, packetCount: Int) throws {
        let (status, opened) = AF.open(URL(fileURLWithPath: path))
        expectStatus(status, noErr, "AudioFileOpenURL")
        let file = try #require(opened)
        defer { AudioFileClose(file) }
        let fileFormat = try #require(AF.dataFormat(file))
        #expect(fileFormat.matches(format), "AudioFile: \(fileFormat)\nstream: \(format)")
        #expect(AF.property(file, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == UInt64(packetCount))
        if let table = AF.property(file, kAudioFilePropertyPacketTableInfo, AudioFilePacketTableInfo.self).1, let ours = p.packetTable {
            #expect([table.mNumberValidFrames, Int64(table.mPrimingFrames), Int64(table.mRemainderFrames)] == ours, "AudioFile's packet table \(table)")
        }
    }

    /// The packets and cookie through AudioConverter give ffmpeg's decode (SNR ≥ 60 dB).
    func decodesAsFFmpegDoes(_ c: Case, path: String, packets: [[UInt8]], format: AudioStreamBasicDescription, properties p: StreamProperties) throws {
        var output = AudioStreamBasicDescription(mSampleRate: format.mSampleRate, mFormatID: kAudioFormatLinearPCM,
                                                 mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked, mBytesPerPacket: 4 * format.mChannelsPerFrame,
                                                 mFramesPerPacket: 1, mBytesPerFrame: 4 * format.mChannelsPerFrame,
                                                 mChannelsPerFrame: format.mChannelsPerFrame, mBitsPerChannel: 32, mReserved: 0)
        var offset = 0
        let ranges = packets.map { packet -> (Int, Int) in
            defer { offset += packet.count }
            return (offset, packet.count)
        }
        let decodedBytes = try AudioConverterTests.decode(Array(packets.joined()), packets: ranges, cookie: p.cookie ?? [], from: format, to: output)
        output.mReserved = 0
        let decoded = decodedBytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let reference = Array(try ffmpeg(["-i", path, "-f", "f32le", "-"])).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let priming = Int(p.packetTable?[1] ?? 0)
        let lags = c.trims ? [priming] : Array(0...2200)
        let fit = AFS.snr(decoded, Array(reference.prefix(44100)), channels: c.channels, lags: lags)
        print("\(c.name): decoded \(decoded.count / c.channels) frames, ffmpeg \(reference.count / c.channels); SNR \(fit.snr) dB at lag \(fit.lag)")
        #expect(fit.snr >= 60, "\(c.name): \(fit.snr) dB at lag \(fit.lag)")
    }

    /// Seek gives each probed packet's offset from the data offset, and the bytes from there
    /// (after a discontinuity) start with that packet.
    func seeksToPackets(_ file: [UInt8], probed: [(pos: Int, size: Int)], dataOffset: Int64, packets: [[UInt8]], countKnown: Bool) throws {
        let capture = StreamCapture()
        let stream = try #require(AFS.open(capture))
        defer { AudioFileStreamClose(stream) }
        expectStatus(AFS.feed(stream, file, chunk: 4096), noErr, "parse")
        for packet in [0, 1, probed.count / 2, probed.count - 1] {
            var byteOffset: Int64 = -1
            var flags: AudioFileStreamSeekFlags = []
            expectStatus(AudioFileStreamSeek(stream, Int64(packet), &byteOffset, &flags), noErr, "seek to \(packet)")
            #expect(byteOffset == Int64(probed[packet].pos) - dataOffset && flags.rawValue == 0,
                    "packet \(packet): offset \(byteOffset), ffprobe \(Int64(probed[packet].pos) - dataOffset), flags \(flags.rawValue)")
            let before = capture.packets.count
            let rest = Array(file[Int(dataOffset + byteOffset)...].prefix(20000))
            expectStatus(AFS.feed(stream, rest, chunk: 700, flags: .discontinuity), noErr, "parse after the seek")
            #expect(capture.packets.count > before && capture.packets[before] == packets[packet], "the first packet after seeking to \(packet)")
        }
        var byteOffset: Int64 = 0
        var flags: AudioFileStreamSeekFlags = []
        if countKnown {
            expectStatus(AudioFileStreamSeek(stream, Int64(probed.count) + 5, &byteOffset, &flags), kAudioFileStreamError_InvalidPacketOffset, "seek past the end")
        } else {
            // A stream of unknown length: packets not parsed yet are estimated from the average.
            expectStatus(AudioFileStreamSeek(stream, Int64(probed.count) + 5, &byteOffset, &flags), noErr, "seek past the packets parsed")
            #expect(flags == .offsetIsEstimated && byteOffset > Int64(probed.last?.pos ?? 0) - dataOffset)
        }
        expectStatus(AudioFileStreamSeek(stream, -1, &byteOffset, &flags), kAudioFileStreamError_InvalidPacketOffset, "seek to -1")
    }
}
