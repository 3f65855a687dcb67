import AudioToolbox
import Foundation
import SoundFile
import Testing
import JackTestSupport
import RefereeTesting

/// Files of compressed packets (CAF with 'pakt'/'kuki', MPEG-4 .m4a, ADTS): files made by
/// ffmpeg's command line tool read back with the packets, cookie and priming ffprobe lists;
/// files written with AudioFileWritePackets open in ffmpeg/ffprobe (and sox for ALAC CAF) with
/// the same packets and decode to the same samples.
@Suite(.refereeCrashesAreKnownIssues) struct AudioFilePacketTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    // MARK: Peers

    /// Runs ffmpeg with `arguments`, quiet and overwriting.
    @discardableResult
    func ffmpeg(_ arguments: [String]) throws -> Data {
        let result = try runReferee(try #require(tool("ffmpeg")), ["-nostdin", "-v", "error", "-y"] + arguments)
        #expect(result.status == 0, "ffmpeg \(arguments.joined(separator: " ")): \(result.stderr)")
        return result.stdout
    }

    /// A test signal: two tones and noise, `seconds` long, encoded by ffmpeg into `name`.
    func makeFile(_ name: String, codec: [String], rate: Int, channels: Int = 2, seconds: Double = 1) throws -> String {
        let path = scratch.path(name)
        try ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=\(rate):duration=\(seconds)",
                    "-f", "lavfi", "-i", "anoisesrc=r=\(rate):a=0.1:d=\(seconds):seed=7",
                    "-filter_complex", "amix=inputs=2,aformat=channel_layouts=\(channels == 1 ? "mono" : "stereo")"]
                   + codec + [path])
        return path
    }

    struct ProbedPacket: Equatable, CustomStringConvertible {
        var size: Int
        var adler32: String
        var description: String { "\(size) bytes \(adler32)" }
    }

    /// The audio packets ffprobe lists, with the Adler-32 of their data.
    func probePackets(_ path: String) throws -> [ProbedPacket] {
        let result = try runReferee(try #require(tool("ffprobe")),
                             ["-v", "error", "-select_streams", "a:0", "-show_entries", "packet=size,data_hash",
                              "-show_data_hash", "adler32", "-of", "default=nw=1", path])
        #expect(result.status == 0, "ffprobe \(path): \(result.stderr)")
        // "size=288" then "data_hash=adler32:f738890e" for each packet.
        var packets: [ProbedPacket] = []
        for line in String(decoding: result.stdout, as: UTF8.self).split(separator: "\n") {
            if line.hasPrefix("size="), let size = Int(line.dropFirst(5)) { packets.append(ProbedPacket(size: size, adler32: "")) }
            if line.hasPrefix("data_hash=adler32:"), !packets.isEmpty { packets[packets.count - 1].adler32 = String(line.dropFirst(18)) }
        }
        return packets
    }

    /// ffprobe's codec name and extradata (hex) of the first audio stream.
    func probeStream(_ path: String) throws -> (codec: String, extradata: [UInt8]) {
        let result = try runReferee(try #require(tool("ffprobe")),
                             ["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=codec_name,extradata", "-show_data",
                              "-of", "default", path])
        let text = String(decoding: result.stdout, as: UTF8.self)
        let codec = text.split(separator: "\n").first { $0.hasPrefix("codec_name=") }.map { String($0.dropFirst(11)) } ?? ""
        // Hex dump lines: "00000000: 1190 56e5 00    ..V..".
        var bytes: [UInt8] = []
        for line in text.split(separator: "\n") where line.count > 10 && line.dropFirst(8).hasPrefix(": ") {
            let hex = line.dropFirst(10).prefix(40).split(separator: " ").joined()
            var index = hex.startIndex
            while hex.distance(from: index, to: hex.endIndex) >= 2 {
                let next = hex.index(index, offsetBy: 2)
                if let byte = UInt8(hex[index..<next], radix: 16) { bytes.append(byte) }
                index = next
            }
        }
        return (codec, bytes)
    }

    /// ffmpeg's decode of a file to interleaved 32-bit float (what the edit list or gapless
    /// header leaves, for containers ffmpeg trims).
    func decode(_ path: String) throws -> [Float] {
        let data = try ffmpeg(["-i", path, "-f", "f32le", "-"])
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    // MARK: Reading through the API

    struct ReadPackets {
        var packets: [[UInt8]] = []
        var descriptions: [AudioStreamPacketDescription] = []
    }

    /// Every packet of an open file, read with ReadPacketData in chunks of 7 packets into a
    /// buffer of MaximumPacketSize × 7 bytes.
    func readAll(_ file: AudioFileID) -> ReadPackets {
        let maximum = Int(AF.property(file, kAudioFilePropertyMaximumPacketSize, UInt32.self).1 ?? 0)
        let total = Int(AF.property(file, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 ?? 0)
        var result = ReadPackets()
        var buffer = [UInt8](repeating: 0, count: max(maximum * 7, 1))
        var descriptions = [AudioStreamPacketDescription](repeating: .init(), count: 7)
        var start: Int64 = 0
        while true {
            var byteCount = UInt32(buffer.count)
            var packetCount: UInt32 = 7
            let status = buffer.withUnsafeMutableBytes { bytes in
                AudioFileReadPacketData(file, false, &byteCount, &descriptions, start, &packetCount, bytes.baseAddress!)
            }
            for description in descriptions.prefix(Int(packetCount)) {
                let begin = Int(description.mStartOffset)
                result.packets.append(Array(buffer[begin..<begin + Int(description.mDataByteSize)]))
                result.descriptions.append(description)
            }
            start += Int64(packetCount)
            if status == kAudioFileEndOfFileError { break }
            expectStatus(status, noErr, "ReadPacketData at \(start)")
            if status != noErr || packetCount == 0 { break }
        }
        #expect(result.packets.count == total, "AudioDataPacketCount is the number of packets read")
        return result
    }

    static func adler32(_ bytes: [UInt8]) -> String {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return String(format: "%08x", b << 16 | a)
    }

    func expectSamePackets(_ read: ReadPackets, _ probed: [ProbedPacket], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let ours = read.packets.map { ProbedPacket(size: $0.count, adler32: Self.adler32($0)) }
        #expect(ours.count == probed.count, "\(what): \(ours.count) packets, ffprobe lists \(probed.count)", sourceLocation: sourceLocation)
        let differing = zip(ours, probed).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(differing == nil, "\(what): packet \(differing?.offset ?? -1) is \(String(describing: differing?.element.0)), ffprobe \(String(describing: differing?.element.1))",
                sourceLocation: sourceLocation)
    }

    func packetTable(_ file: AudioFileID) -> AudioFilePacketTableInfo? {
        AF.property(file, kAudioFilePropertyPacketTableInfo, AudioFilePacketTableInfo.self).1
    }

    func cookie(_ file: AudioFileID) -> [UInt8]? {
        var size: UInt32 = 0
        guard AudioFileGetPropertyInfo(file, kAudioFilePropertyMagicCookieData, &size, nil) == noErr else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        guard AudioFileGetProperty(file, kAudioFilePropertyMagicCookieData, &size, &bytes) == noErr else { return nil }
        return bytes
    }

    /// What a file of packets holds, read through the API.
    struct PacketSource {
        var format: AudioStreamBasicDescription
        var read: ReadPackets
        var cookie: [UInt8]?
        var table: AudioFilePacketTableInfo?
    }

    func load(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> PacketSource {
        let (status, file) = AF.open(URL(fileURLWithPath: path))
        expectStatus(status, noErr, "open \(path)", sourceLocation: sourceLocation)
        let input = try #require(file, sourceLocation: sourceLocation)
        defer { AudioFileClose(input) }
        return PacketSource(format: try #require(AF.dataFormat(input)), read: readAll(input), cookie: cookie(input), table: packetTable(input))
    }

    /// Writes `source`'s packets into a new file of `type` at `url`, `chunk` packets a call with
    /// their descriptions (as a recorder's callback writes them), cookie and packet table info
    /// set first, as the guide's recorder does.
    /// - Parameter emptyWrites: also write no packets before, between and after those writes,
    ///   as the guide's callback does with the unfilled buffers a stopping queue returns.
    func copy(_ source: PacketSource, to url: URL, type: AudioFileTypeID, chunk: Int, emptyWrites: Bool = false,
              sourceLocation: SourceLocation = #_sourceLocation) throws {
        var format = source.format
        var output: AudioFileID?
        expectStatus(AudioFileCreateWithURL(url as CFURL, type, &format, .eraseFile, &output), noErr, "create", sourceLocation: sourceLocation)
        let copy = try #require(output, sourceLocation: sourceLocation)
        if let cookie = source.cookie {
            expectStatus(AudioFileSetProperty(copy, kAudioFilePropertyMagicCookieData, UInt32(cookie.count), cookie), noErr, "cookie",
                         sourceLocation: sourceLocation)
        }
        if var table = source.table {
            expectStatus(AudioFileSetProperty(copy, kAudioFilePropertyPacketTableInfo, UInt32(MemoryLayout<AudioFilePacketTableInfo>.size), &table),
                         noErr, "packet table", sourceLocation: sourceLocation)
        }
        /// Writes no packets at `packet`: 0 bytes and NULL descriptions (a stopping queue's
        /// unfilled buffer, as the guide's callback hands it over), then bytes and a description
        /// that a count of 0 leaves unread.
        func writeNothing(at packet: Int64) {
            guard emptyWrites else { return }
            let buffer = [UInt8](repeating: 0x5A, count: 16)
            var none: UInt32 = 0
            expectStatus(AudioFileWritePackets(copy, false, 0, nil, packet, &none, buffer), noErr, "no packets at \(packet)",
                         sourceLocation: sourceLocation)
            let unread = [AudioStreamPacketDescription(mStartOffset: 0, mVariableFramesInPacket: 0, mDataByteSize: 16)]
            var alsoNone: UInt32 = 0
            expectStatus(AudioFileWritePackets(copy, false, 16, unread, packet, &alsoNone, buffer), noErr,
                         "no packets, with bytes and a description, at \(packet)", sourceLocation: sourceLocation)
            #expect(none == 0 && alsoNone == 0, "no packets written", sourceLocation: sourceLocation)
        }
        var next: Int64 = 0
        for first in stride(from: 0, to: source.read.packets.count, by: chunk) {
            writeNothing(at: next)
            let packets = source.read.packets[first..<min(first + chunk, source.read.packets.count)]
            var bytes: [UInt8] = []
            var descriptions: [AudioStreamPacketDescription] = []
            for packet in packets {
                descriptions.append(.init(mStartOffset: Int64(bytes.count), mVariableFramesInPacket: 0, mDataByteSize: UInt32(packet.count)))
                bytes += packet
            }
            var count = UInt32(packets.count)
            expectStatus(AudioFileWritePackets(copy, false, UInt32(bytes.count), descriptions, next, &count, bytes), noErr, "write at \(next)",
                         sourceLocation: sourceLocation)
            next += Int64(count)
        }
        writeNothing(at: next)
        expectStatus(AudioFileClose(copy), noErr, "close", sourceLocation: sourceLocation)
    }

    // MARK: Files ffmpeg made

    /// An AAC .m4a from ffmpeg: 'aac ' with 1024 frames per packet, the packets ffprobe lists
    /// byte for byte, 1024 priming frames (the edit list) and the remainder of the last packet,
    /// and the AudioSpecificConfig inside the ES_Descriptor cookie.
    @Test func aacM4AFromFFmpegReadsAsFFprobeListsIt() throws {
        let path = try makeFile("tone.m4a", codec: ["-c:a", "aac", "-b:a", "128k"], rate: 48000)
        let (status, file) = AF.open(URL(fileURLWithPath: path))
        expectStatus(status, noErr, "open")
        let opened = try #require(file)
        defer { AudioFileClose(opened) }
        let format = try #require(AF.dataFormat(opened))
        #expect(format.mFormatID == kAudioFormatMPEG4AAC && format.mFramesPerPacket == 1024 && format.mChannelsPerFrame == 2
                && format.mSampleRate == 48000 && format.mBytesPerPacket == 0)
        #expect(AF.property(opened, kAudioFilePropertyFileFormat, UInt32.self).1 == kAudioFileM4AType)
        let read = readAll(opened)
        expectSamePackets(read, try probePackets(path), "m4a")
        #expect(read.descriptions.allSatisfy { $0.mVariableFramesInPacket == 0 })
        let table = try #require(packetTable(opened))
        #expect(table.mPrimingFrames == 1024 && table.mNumberValidFrames == 48000)
        #expect(Int64(read.packets.count) * 1024 == table.mNumberValidFrames + Int64(table.mPrimingFrames) + Int64(table.mRemainderFrames))
        let maximum = AF.property(opened, kAudioFilePropertyMaximumPacketSize, UInt32.self).1
        #expect(maximum == UInt32(read.packets.map(\.count).max() ?? 0))
        #expect((AF.property(opened, kAudioFilePropertyPacketSizeUpperBound, UInt32.self).1 ?? 0) >= maximum ?? 0)
        let esds = try #require(cookie(opened))
        #expect(esds.first == 0x03, "the cookie is an ES_Descriptor")
        let config = try probeStream(path).extradata
        #expect(config.count >= 2 && (0...esds.count - config.count).contains { Array(esds[$0..<$0 + config.count]) == config },
                "the AudioSpecificConfig ffprobe shows is inside the cookie")
    }

    /// ALAC from ffmpeg in .m4a and in .caf (copied): 'alac' with 4096 frames per packet and
    /// the source depth in the flags, the packets ffprobe lists, the short last packet as
    /// remainder frames, the 24-byte ALACSpecificConfig as cookie.
    @Test(arguments: ["m4a", "caf"])
    func alacFromFFmpegReadsAsFFprobeListsIt(_ container: String) throws {
        let m4a = try makeFile("lossless.m4a", codec: ["-c:a", "alac", "-sample_fmt", "s16p"], rate: 44100)
        var path = m4a
        if container == "caf" {
            path = scratch.path("lossless.caf")
            try ffmpeg(["-i", m4a, "-c", "copy", path])
        }
        let (status, file) = AF.open(URL(fileURLWithPath: path))
        expectStatus(status, noErr, "open")
        let opened = try #require(file)
        defer { AudioFileClose(opened) }
        let format = try #require(AF.dataFormat(opened))
        #expect(format.mFormatID == kAudioFormatAppleLossless && format.mFramesPerPacket == 4096)
        // ffmpeg's CAF muxer leaves the flags 0 and counts the padding of the last packet as
        // valid frames; the file is reported as it is.
        #expect(format.mFormatFlags == (container == "m4a" ? 1 : 0))
        #expect(AF.property(opened, kAudioFilePropertySourceBitDepth, Int32.self).1 == 16)
        let read = readAll(opened)
        expectSamePackets(read, try probePackets(path), container)
        let table = try #require(packetTable(opened))
        #expect(table.mNumberValidFrames == (container == "m4a" ? 44100 : 11 * 4096) && table.mPrimingFrames == 0)
        #expect(cookie(opened)?.count ?? 0 >= 24)
    }

    // MARK: Files written here

    /// Packets of an AAC .m4a copied with ReadPacketData → WritePackets (cookie and packet
    /// table info set as the guide's recorder does) into CAF, M4A and ADTS: ffprobe lists the
    /// same packets, and ffmpeg decodes the copies to the original's samples (CAF, which ffmpeg
    /// does not trim, after the priming).
    @Test(arguments: [(kAudioFileCAFType, "caf"), (kAudioFileM4AType, "m4a"), (kAudioFileAAC_ADTSType, "aac")])
    func aacPacketsCopiedIntoEachContainerDecodeToTheSameSamples(_ type: AudioFileTypeID, _ suffix: String) throws {
        let source = try makeFile("source.m4a", codec: ["-c:a", "aac", "-b:a", "128k"], rate: 48000)
        let loaded = try load(source)
        let read = loaded.read
        let table = try #require(loaded.table)
        let url = scratch.url("copy.\(suffix)")
        try copy(loaded, to: url, type: type, chunk: 5)

        if type == kAudioFileAAC_ADTSType {
            // ffprobe's ADTS packets include the 7-byte header written before each.
            #expect(try probePackets(url.path).map(\.size) == read.packets.map { $0.count + 7 }, "ADTS frames are header + packet")
        } else {
            expectSamePackets(read, try probePackets(url.path), "\(suffix) copy")
        }
        let original = try decode(source)
        let decoded = try decode(url.path)
        if type == kAudioFileCAFType || type == kAudioFileAAC_ADTSType {
            // The whole decoder output: priming first.
            let start = Int(table.mPrimingFrames) * 2
            #expect(decoded.count >= start + original.count)
            #expect(decoded.count >= start + original.count && Array(decoded[start..<start + original.count]) == original,
                    "after the priming the samples are the original's")
        } else {
            #expect(decoded == original, "the copy decodes sample for sample as the original (edit list kept)")
        }
        // And the copy reads back through the API as it was written.
        let (reopened, again) = AF.open(url)
        expectStatus(reopened, noErr, "reopen")
        if let again {
            #expect(readAll(again).packets == read.packets)
            if type != kAudioFileAAC_ADTSType {
                let back = packetTable(again)
                #expect(back?.mPrimingFrames == table.mPrimingFrames && back?.mNumberValidFrames == table.mNumberValidFrames)
            }
            AudioFileClose(again)
        }
    }

    /// Writes of no packets (0 bytes and NULL descriptions: what the guide's recorder writes for
    /// each unfilled buffer a stopping AAC queue returns) are no-ops returning noErr, as on Apple
    /// platforms: AAC packets copied with such writes before, between and after the real ones
    /// list the same packets in ffprobe and decode to the same samples as a copy without them.
    /// One past the end is `kAudioFileInvalidPacketOffsetError`, as a write there would be.
    @Test(arguments: [(kAudioFileCAFType, "caf"), (kAudioFileM4AType, "m4a"), (kAudioFileAAC_ADTSType, "aac")])
    func writesOfNoPacketsChangeNothing(_ type: AudioFileTypeID, _ suffix: String) throws {
        let source = try load(try makeFile("source.m4a", codec: ["-c:a", "aac", "-b:a", "128k"], rate: 48000))
        let plain = scratch.url("plain.\(suffix)"), withEmpty = scratch.url("empty-writes.\(suffix)")
        try copy(source, to: plain, type: type, chunk: 5)
        try copy(source, to: withEmpty, type: type, chunk: 5, emptyWrites: true)
        let packets = try probePackets(withEmpty.path), plainPackets = try probePackets(plain.path)
        #expect(packets.count == source.read.packets.count)
        #expect(packets == plainPackets, "ffprobe lists the same packets")
        let decoded = try decode(withEmpty.path), plainDecoded = try decode(plain.path)
        #expect(!decoded.isEmpty && decoded == plainDecoded, "ffmpeg decodes the same samples")
        let (reopened, again) = AF.open(withEmpty)
        expectStatus(reopened, noErr, "reopen")
        if let again {
            #expect(readAll(again).packets == source.read.packets)
            AudioFileClose(again)
        }

        var format = source.format
        var output: AudioFileID?
        expectStatus(AudioFileCreateWithURL(scratch.url("past.\(suffix)") as CFURL, type, &format, .eraseFile, &output), noErr, "create")
        let file = try #require(output)
        var none: UInt32 = 0
        expectStatus(AudioFileWritePackets(file, false, 0, nil, 1, &none, [UInt8](repeating: 0, count: 4)),
                     kAudioFileInvalidPacketOffsetError, "no packets past the end")
        expectStatus(AudioFileClose(file), noErr, "close")
    }

    /// ALAC packets copied into a CAF written here decode bit-exactly, in ffmpeg and in
    /// libsndfile, to the source's samples.
    @Test func alacCAFWrittenHereDecodesBitExactlyInFFmpegAndLibsndfile() throws {
        let source = try makeFile("source.m4a", codec: ["-c:a", "alac", "-sample_fmt", "s16p"], rate: 44100)
        let url = scratch.url("copy.caf")
        try copy(try load(source), to: url, type: kAudioFileCAFType, chunk: 1)
        let original = try decode(source)
        let decoded = try decode(url.path)
        #expect(decoded.count >= original.count && Array(decoded.prefix(original.count)) == original, "ffmpeg decodes the same samples")
        #expect(decoded.count == original.count, "ALAC packets carry their frame counts: the short last packet decodes short")
        // sox 14.4 cannot decode ALAC CAF (not even libsndfile's own); libsndfile, which it
        // would use, reads the file directly.
        let sound = try SoundFile(path: url.path, mode: .read)
        defer { try? sound.close() }
        #expect(sound.info.frameCount == 44100, "libsndfile counts the valid frames of the packet table")
        var samples = [Float](repeating: 0, count: 44100 * 2 + 64)
        let moved = samples.withUnsafeMutableBufferPointer { sound.readFrames(into: $0) }
        #expect(moved.count == 44100 && Array(samples.prefix(44100 * 2)) == original, "libsndfile decodes the same samples")
    }

    // MARK: Bad input

    /// The reference's codes for what cannot be done with packets.
    @Test func misuseGetsResultCodes() throws {
        var aac = AudioStreamBasicDescription(mSampleRate: 48000, mFormatID: kAudioFormatMPEG4AAC, mFormatFlags: 0, mBytesPerPacket: 0,
                                              mFramesPerPacket: 1024, mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
        var file: AudioFileID?
        // AAC in a WAVE file: not a format WAVE holds.
        expectStatus(AudioFileCreateWithURL(scratch.url("x.wav") as CFURL, kAudioFileWAVEType, &aac, .eraseFile, &file),
                     kAudioFileUnsupportedDataFormatError, "AAC in WAVE")
        // Linear PCM in an .m4a.
        var pcm = Encoding.s16.format(channels: 2, bigEndian: false)
        expectStatus(AudioFileCreateWithURL(scratch.url("x.m4a") as CFURL, kAudioFileM4AType, &pcm, .eraseFile, &file),
                     kAudioFileUnsupportedDataFormatError, "PCM in M4A")
        // An unknown format ID.
        var unknown = aac
        unknown.mFormatID = 0x7A7A7A7A
        expectStatus(AudioFileCreateWithURL(scratch.url("x.caf") as CFURL, kAudioFileCAFType, &unknown, .eraseFile, &file),
                     kAudioFileUnsupportedDataFormatError, "unknown format in CAF")
        expectStatus(AudioFileCreateWithURL(scratch.url("x.caf") as CFURL, kAudioFileCAFType, &aac, .eraseFile, &file), noErr, "create")
        let created = try #require(file)
        var count: UInt32 = 1
        let packet = [UInt8](repeating: 0x21, count: 100)
        // Variable-size packets without descriptions.
        expectStatus(AudioFileWritePackets(created, false, 100, nil, 0, &count, packet), kAudio_ParamError, "no descriptions")
        // A description outside the bytes given.
        var description = AudioStreamPacketDescription(mStartOffset: 50, mVariableFramesInPacket: 0, mDataByteSize: 100)
        count = 1
        expectStatus(AudioFileWritePackets(created, false, 100, &description, 0, &count, packet), kAudio_ParamError, "outside")
        // A gap.
        description = .init(mStartOffset: 0, mVariableFramesInPacket: 0, mDataByteSize: 100)
        count = 1
        expectStatus(AudioFileWritePackets(created, false, 100, &description, 3, &count, packet), kAudioFileInvalidPacketOffsetError, "gap")
        expectStatus(AudioFileWritePackets(created, false, 100, &description, 0, &count, packet), noErr, "write")
        // A buffer too small for the packet, and a read past the end.
        var small = [UInt8](repeating: 0, count: 10)
        var byteCount: UInt32 = 10
        count = 1
        expectStatus(AudioFileReadPacketData(created, false, &byteCount, nil, 0, &count, &small), kAudio_ParamError, "small buffer")
        byteCount = 10
        count = 1
        expectStatus(AudioFileReadPacketData(created, false, &byteCount, nil, 5, &count, &small), kAudioFileInvalidPacketOffsetError, "past end")
        // Bytes: packets only.
        byteCount = 4
        expectStatus(AudioFileWriteBytes(created, false, 0, &byteCount, packet), kAudioFileOperationNotSupportedError, "WriteBytes")
        expectStatus(AudioFileClose(created), noErr, "close")
        // Opening a compressed file for writing.
        let (status, _) = AF.open(scratch.url("x.caf"), .readWritePermission)
        expectStatus(status, kAudioFileOperationNotSupportedError, "open for writing")
    }

    /// Damaged headers of packet files get Apple's codes: a truncated .m4a, a CAF whose packet
    /// table claims more packets than it holds or runs past the data, a CAF of an unknown
    /// format, an MPEG-4 file without audio.
    @Test func damagedHeadersGetResultCodes() throws {
        let m4a = try makeFile("good.m4a", codec: ["-c:a", "aac", "-b:a", "64k"], rate: 44100)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: m4a))
        func expectOpen(_ data: Data, _ name: String, _ expected: OSStatus, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let url = scratch.url(name)
            try data.write(to: url)
            let (status, file) = AF.open(url)
            expectStatus(status, expected, name, sourceLocation: sourceLocation)
            if let file { AudioFileClose(file) }
        }
        // The 'moov' index is at the end: cut it off.
        try expectOpen(bytes.prefix(bytes.count / 2), "truncated.m4a", kAudioFileInvalidFileError)
        // ftyp only.
        try expectOpen(bytes.prefix(32), "header-only.m4a", kAudioFileInvalidFileError)

        // A CAF written here, then damaged.
        let source = try makeFile("source.m4a", codec: ["-c:a", "aac", "-b:a", "64k"], rate: 48000)
        let url = scratch.url("good.caf")
        try copy(try load(source), to: url, type: kAudioFileCAFType, chunk: 1)
        var caf = [UInt8](try Data(contentsOf: url))
        func offset(of tag: String) -> Int {
            let needle = Array(tag.utf8)
            return (0..<caf.count - 4).first { Array(caf[$0..<$0 + 4]) == needle }!
        }
        let pakt = offset(of: "pakt")
        var damaged = caf
        damaged[pakt + 12] = 0x7F  // packets: 2^62 and more
        try expectOpen(Data(damaged), "packets.caf", kAudioFileInvalidFileError)
        damaged = caf
        damaged[pakt + 12 + 24] = 0x8F  // the first packet's size: far past the data
        damaged[pakt + 12 + 25] |= 0x80
        try expectOpen(Data(damaged), "sizes.caf", kAudioFileInvalidFileError)
        damaged = caf
        let desc = offset(of: "desc")
        damaged.replaceSubrange(desc + 20..<desc + 24, with: Array("zzzz".utf8))
        try expectOpen(Data(damaged), "format.caf", kAudioFileUnsupportedDataFormatError)
        damaged = caf
        damaged.removeSubrange(pakt...)
        try expectOpen(Data(damaged), "no-pakt.caf", kAudioFileInvalidFileError)
        caf = Array(caf.prefix(offset(of: "data") + 20))
        try expectOpen(Data(caf), "cut.caf", kAudioFileInvalidFileError)
    }
}
