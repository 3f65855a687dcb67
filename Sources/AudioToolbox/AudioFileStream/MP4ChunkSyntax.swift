import AudioCodec
import CAudioToolbox

/// MPEG-4 streams (.m4a, .mp4) whose movie header ('moov') comes before the media data
/// ('mdat', as `ffmpeg -movflags +faststart` and iTunes write them): the first sound track's
/// sample table gives each packet's offset and size. AAC (its ES descriptor the cookie),
/// ALAC and MP3 tracks. 'mdat' before 'moov' cannot stream ('optm', NotOptimized).
final class MP4ChunkSyntax: ChunkSyntax {
    private var track: MP4SoundTrack?

    var fileHeaderLength: Int { 0 }
    var padsToEven: Bool { false }
    var dataPrefixLength: Int { 0 }

    func checkFileHeader(_ bytes: [UInt8]) throws(AudioToolboxError) {}

    func chunkHeader(_ input: StreamBuffer) throws(AudioToolboxError) -> (type: String, size: Int64?, headerLength: Int)? {
        guard input.count >= 8 else { return nil }
        let size = Int64(input.bigEndian32(0))
        let type = input.tag(4)
        if size == 1 {
            guard input.count >= 16 else { return nil }
            let large = Int64(bitPattern: UInt64(input.bigEndian32(8)) << 32 | UInt64(input.bigEndian32(12)))
            guard large >= 16 else { throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "a '\(type)' box of \(large) bytes") }
            return (type, large - 16, 16)
        }
        if size == 0 { return (type, nil, 8) }
        guard size >= 8 else { throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "a '\(type)' box of \(size) bytes") }
        return (type, size - 8, 8)
    }

    func isData(_ type: String) -> Bool { type == "mdat" }
    func wants(_ type: String) -> Bool { type == "moov" || type == "ftyp" }
    private var brand = ""

    func read(_ type: String, _ body: [UInt8]) throws(AudioToolboxError) {
        if type == "ftyp" {
            brand = body.fourCC(0)
            return
        }
        guard track == nil else { return }
        track = try MP4SoundTrack(moov: body)
    }

    func finish(dataPrefix: [UInt8], dataStart: inout Int64, dataSize: inout Int64?,
                _ header: inout StreamHeader) throws(AudioToolboxError) -> (properties: [AudioFileStreamPropertyID], layout: StreamPacketLayout) {
        guard let track else { throw AudioToolboxError(kAudioFileStreamError_NotOptimized, "the media data comes before the movie header") }
        header.fileFormat = brand == "M4A " || brand == "M4B " || brand == "M4P " ? kAudioFileM4AType : kAudioFileMPEG4Type
        header.dataFormat = track.format
        var properties = [kAudioFileStreamProperty_FileFormat, kAudioFileStreamProperty_DataFormat]
        if let cookie = track.cookie {
            header.magicCookie = cookie
            properties.append(kAudioFileStreamProperty_MagicCookieData)
        }
        header.channelLayout = .default(channelCount: Int(track.format.mChannelsPerFrame))
        header.packetTable = track.packetTable
        header.packetSizeUpperBound = track.sizes.max()
        if track.packetTable != nil { properties.append(kAudioFileStreamProperty_PacketTableInfo) }
        // The data offset is the first packet's (the audio may not start at the box's start).
        if let first = track.offsets.first, first >= dataStart {
            dataSize = dataSize.map { $0 - (first - dataStart) }
            dataStart = first
        }
        properties += [kAudioFileStreamProperty_ChannelLayout, kAudioFileStreamProperty_DataOffset,
                       kAudioFileStreamProperty_AudioDataByteCount, kAudioFileStreamProperty_AudioDataPacketCount]
        return (properties, .table(offsets: track.offsets, sizes: track.sizes, frames: track.frames))
    }
}

/// What a 'moov' box says of its first sound track.
struct MP4SoundTrack {
    var format: AudioStreamBasicDescription
    var cookie: [UInt8]?
    var offsets: [Int64] = []
    var sizes: [UInt32] = []
    var frames: [UInt32]?
    var packetTable: AudioFilePacketTableInfo?

    private static func damaged(_ reason: String) -> AudioToolboxError {
        AudioToolboxError(kAudioFileStreamError_InvalidFile, "damaged MPEG-4 movie header: \(reason)")
    }

    /// The boxes directly inside `range` of `bytes`: type and body range.
    static func boxes(_ bytes: [UInt8], _ range: Range<Int>) throws(AudioToolboxError) -> [(type: String, body: Range<Int>)] {
        var found: [(String, Range<Int>)] = []
        var i = range.lowerBound
        while i + 8 <= range.upperBound, found.count < 4096 {
            var size = Int(bytes.be(i, UInt32.self))
            var headerLength = 8
            if size == 1 {
                guard i + 16 <= range.upperBound else { throw damaged("a cut box header") }
                size = Int(clamping: bytes.be(i + 8, UInt64.self))
                headerLength = 16
            } else if size == 0 {
                size = range.upperBound - i
            }
            guard size >= headerLength, size <= range.upperBound - i else { throw damaged("a '\(bytes.fourCC(i + 4))' box of \(size) bytes") }
            found.append((bytes.fourCC(i + 4), (i + headerLength)..<(i + size)))
            i += size
        }
        return found
    }

    static func child(_ bytes: [UInt8], _ range: Range<Int>, _ path: [String]) throws(AudioToolboxError) -> Range<Int>? {
        var range = range
        for type in path {
            guard let next = try boxes(bytes, range).first(where: { $0.type == type }) else { return nil }
            range = next.body
        }
        return range
    }

    init(moov: [UInt8]) throws(AudioToolboxError) {
        let all = 0..<moov.count
        var movieTimescale: UInt32 = 0
        if let mvhd = try Self.child(moov, all, ["mvhd"]) {
            movieTimescale = moov.be(mvhd.lowerBound + (moov[mvhd.lowerBound] == 1 ? 20 : 12))
        }
        var soundTrack: Range<Int>?
        for trak in try Self.boxes(moov, all) where trak.type == "trak" {
            if let hdlr = try Self.child(moov, trak.body, ["mdia", "hdlr"]), moov.fourCC(hdlr.lowerBound + 8) == "soun" {
                soundTrack = trak.body
                break
            }
        }
        guard let trak = soundTrack, let mdia = try Self.child(moov, trak, ["mdia"]),
              let stbl = try Self.child(moov, mdia, ["minf", "stbl"]), let stsd = try Self.child(moov, stbl, ["stsd"])
        else { throw AudioToolboxError(kAudioFileStreamError_UnsupportedDataFormat, "no sound track in the movie") }
        var mediaTimescale: UInt32 = 0
        if let mdhd = try Self.child(moov, mdia, ["mdhd"]) {
            mediaTimescale = moov.be(mdhd.lowerBound + (moov[mdhd.lowerBound] == 1 ? 20 : 12))
        }
        (format, cookie) = try Self.sampleEntry(moov, stsd, timescale: mediaTimescale)
        try readSampleTable(moov, stbl)
        let deltas = try Self.sampleDeltas(moov, stbl, count: sizes.count)
        // A codec's fixed packet length stays (the last packet may be shorter: its remainder).
        if format.mFramesPerPacket == 0, let first = deltas.first {
            if deltas.allSatisfy({ $0 == first }), first > 0 {
                format.mFramesPerPacket = first
            } else {
                frames = deltas
            }
        }
        if let elst = try Self.child(moov, trak, ["edts", "elst"]), movieTimescale > 0, mediaTimescale > 0 {
            // Packets of a fixed length hold that many frames, the last one too (its stts delta is only the valid part).
            let total = format.mFramesPerPacket > 0 ? Int64(sizes.count) * Int64(format.mFramesPerPacket) : deltas.reduce(Int64(0)) { $0 + Int64($1) }
            packetTable = Self.editList(moov, elst, movieTimescale: movieTimescale, mediaTimescale: mediaTimescale, totalFrames: total)
        }
    }

    /// The format and cookie of the first sample description.
    private static func sampleEntry(_ moov: [UInt8], _ stsd: Range<Int>, timescale: UInt32) throws(AudioToolboxError)
        -> (AudioStreamBasicDescription, [UInt8]?) {
        guard let entry = try boxes(moov, (stsd.lowerBound + 8)..<stsd.upperBound).first, entry.body.count >= 28 else {
            throw damaged("no sample description")
        }
        let b = entry.body.lowerBound
        let version = moov.be(b + 8, UInt16.self)
        var channels = UInt32(moov.be(b + 16, UInt16.self))
        var rate = Double(moov.be(b + 24, UInt32.self) >> 16)
        if rate == 0 { rate = Double(timescale) }
        let childStart = b + 28 + (version == 1 ? 16 : version == 2 ? 36 : 0)
        let children = childStart <= entry.body.upperBound ? childStart..<entry.body.upperBound : entry.body.upperBound..<entry.body.upperBound
        var format = AudioStreamBasicDescription(mSampleRate: rate, mFormatID: 0, mFormatFlags: 0, mBytesPerPacket: 0, mFramesPerPacket: 0,
                                                 mBytesPerFrame: 0, mChannelsPerFrame: channels, mBitsPerChannel: 0, mReserved: 0)
        switch entry.type {
        case "mp4a":
            guard let esds = try child(moov, children, ["esds"]), esds.count > 4 else { throw damaged("an 'mp4a' entry without 'esds'") }
            let descriptor = Array(moov[(esds.lowerBound + 4)..<esds.upperBound])
            if Self.objectType(descriptor) == 0x6B {
                format.mFormatID = kAudioFormatMPEGLayer3
                format.mFramesPerPacket = rate >= 32000 ? 1152 : 576
                return (format, nil)
            }
            guard let config = try? MagicCookie.extradata(formatID: kAudioFormatMPEG4AAC, cookie: descriptor), config.count >= 2 else {
                throw AudioToolboxError(kAudioFileStreamError_UnsupportedDataFormat, "an 'esds' with no AudioSpecificConfig")
            }
            let objectType = config[0] >> 3
            let rateIndex = Int((config[0] & 7) << 1 | config[1] >> 7)
            let configChannels = UInt32(config[1] >> 3 & 0xF)
            if rateIndex < MPEGFrameHeader.adtsRates.count { format.mSampleRate = MPEGFrameHeader.adtsRates[rateIndex] }
            if configChannels > 0 { channels = configChannels == 7 ? 8 : configChannels }
            format.mChannelsPerFrame = channels
            switch objectType {
            case 5: format.mFormatID = kAudioFormatMPEG4AAC_HE; format.mFramesPerPacket = 2048
            case 29: format.mFormatID = kAudioFormatMPEG4AAC_HE_V2; format.mFramesPerPacket = 2048
            default: format.mFormatID = kAudioFormatMPEG4AAC; format.mFramesPerPacket = 1024
            }
            if objectType == 5 || objectType == 29, config.count >= 4 {
                let extensionIndex = Int((config[1] & 7) << 1 | config[2] >> 7)
                if extensionIndex < MPEGFrameHeader.adtsRates.count { format.mSampleRate = MPEGFrameHeader.adtsRates[extensionIndex] }
            }
            return (format, MagicCookie.cookie(formatID: format.mFormatID, extradata: config, averageBitRate: 0, maximumPacketSize: 0))
        case "alac":
            guard let atom = try child(moov, children, ["alac"]), atom.count >= 28 else { throw damaged("an 'alac' entry without its configuration") }
            let config = Array(moov[(atom.lowerBound + 4)..<(atom.lowerBound + 28)])
            format.mFormatID = kAudioFormatAppleLossless
            format.mFramesPerPacket = config.be(0, UInt32.self)
            format.mFormatFlags = switch config[5] { case 20: 2; case 24: 3; case 32: 4; default: 1 }
            format.mChannelsPerFrame = UInt32(config[9])
            format.mSampleRate = Double(config.be(20, UInt32.self))
            guard format.mFramesPerPacket > 0, format.mFramesPerPacket <= 1 << 16, format.mChannelsPerFrame > 0, format.mSampleRate > 0 else {
                throw AudioToolboxError(kAudioFileStreamError_UnsupportedDataFormat, "an ALAC configuration of \(format.mFramesPerPacket) frames, \(format.mChannelsPerFrame) channels")
            }
            return (format, config)
        case ".mp3":
            format.mFormatID = kAudioFormatMPEGLayer3
            format.mFramesPerPacket = rate >= 32000 ? 1152 : 576
            return (format, nil)
        default:
            throw AudioToolboxError(kAudioFileStreamError_UnsupportedDataFormat, "MPEG-4 sample entry '\(entry.type)'")
        }
    }

    /// The objectTypeIndication of an ES_Descriptor's DecoderConfigDescriptor, 0 if none is found.
    private static func objectType(_ d: [UInt8]) -> UInt8 {
        var i = 0
        func descriptorHeader(_ tag: UInt8) -> Bool {
            guard i < d.count, d[i] == tag else { return false }
            i += 1
            for _ in 0..<4 {
                guard i < d.count else { return false }
                i += 1
                if d[i - 1] & 0x80 == 0 { break }
            }
            return true
        }
        guard descriptorHeader(0x03), i + 3 <= d.count else { return 0 }
        let flags = d[i + 2]
        i += 3
        if flags & 0x80 != 0 { i += 2 }
        if flags & 0x40 != 0, i < d.count { i += 1 + Int(d[i]) }
        if flags & 0x20 != 0 { i += 2 }
        guard descriptorHeader(0x04), i < d.count else { return 0 }
        return d[i]
    }

    /// stsz, stsc and stco/co64: every sample's offset and size.
    private mutating func readSampleTable(_ moov: [UInt8], _ stbl: Range<Int>) throws(AudioToolboxError) {
        guard let stsz = try Self.child(moov, stbl, ["stsz"]), stsz.count >= 12, let stsc = try Self.child(moov, stbl, ["stsc"]), stsc.count >= 8
        else { throw Self.damaged("no sample sizes or sample-to-chunk table") }
        let uniform: UInt32 = moov.be(stsz.lowerBound + 4)
        let count = Int(moov.be(stsz.lowerBound + 8, UInt32.self))
        guard count <= 1 << 24, uniform != 0 || stsz.count >= 12 + 4 * count else { throw Self.damaged("\(count) sample sizes") }
        sizes = uniform != 0 ? Array(repeating: uniform, count: count) : (0..<count).map { moov.be(stsz.lowerBound + 12 + 4 * $0) }
        var chunkOffsets: [Int64]
        if let stco = try Self.child(moov, stbl, ["stco"]), stco.count >= 8 {
            let n = Int(moov.be(stco.lowerBound + 4, UInt32.self))
            guard stco.count >= 8 + 4 * n else { throw Self.damaged("\(n) chunk offsets") }
            chunkOffsets = (0..<n).map { Int64(moov.be(stco.lowerBound + 8 + 4 * $0, UInt32.self)) }
        } else if let co64 = try Self.child(moov, stbl, ["co64"]), co64.count >= 8 {
            let n = Int(moov.be(co64.lowerBound + 4, UInt32.self))
            guard co64.count >= 8 + 8 * n else { throw Self.damaged("\(n) chunk offsets") }
            chunkOffsets = (0..<n).map { Int64(bitPattern: moov.be(co64.lowerBound + 8 + 8 * $0, UInt64.self)) }
        } else {
            throw Self.damaged("no chunk offsets")
        }
        let entries = Int(moov.be(stsc.lowerBound + 4, UInt32.self))
        guard stsc.count >= 8 + 12 * entries else { throw Self.damaged("\(entries) sample-to-chunk entries") }
        offsets.reserveCapacity(count)
        for e in 0..<entries where offsets.count < count {
            let at = stsc.lowerBound + 8 + 12 * e
            let firstChunk = Int(moov.be(at, UInt32.self))
            let perChunk = Int(moov.be(at + 4, UInt32.self))
            let nextFirst = e + 1 < entries ? Int(moov.be(at + 12, UInt32.self)) : chunkOffsets.count + 1
            guard firstChunk >= 1, nextFirst >= firstChunk, nextFirst - 1 <= chunkOffsets.count, perChunk <= count else {
                throw Self.damaged("a sample-to-chunk entry for chunks \(firstChunk)..<\(nextFirst)")
            }
            for chunk in firstChunk..<nextFirst where offsets.count < count {
                var offset = chunkOffsets[chunk - 1]
                for _ in 0..<perChunk where offsets.count < count {
                    offsets.append(offset)
                    offset += Int64(sizes[offsets.count - 1])
                }
            }
        }
        guard offsets.count == count else { throw Self.damaged("\(offsets.count) of \(count) samples placed in chunks") }
    }

    /// The frames of each sample (stts).
    private static func sampleDeltas(_ moov: [UInt8], _ stbl: Range<Int>, count: Int) throws(AudioToolboxError) -> [UInt32] {
        guard let stts = try child(moov, stbl, ["stts"]), stts.count >= 8 else { return [] }
        let entries = Int(moov.be(stts.lowerBound + 4, UInt32.self))
        guard stts.count >= 8 + 8 * entries else { throw damaged("\(entries) time-to-sample entries") }
        var deltas: [UInt32] = []
        for e in 0..<entries where deltas.count < count {
            let n = Int(moov.be(stts.lowerBound + 8 + 8 * e, UInt32.self))
            let delta: UInt32 = moov.be(stts.lowerBound + 12 + 8 * e)
            deltas += Array(repeating: delta, count: min(n, count - deltas.count))
        }
        return deltas.count == count ? deltas : []
    }

    /// Priming and remainder from the edit list: the first edit's media time and duration.
    private static func editList(_ moov: [UInt8], _ elst: Range<Int>, movieTimescale: UInt32, mediaTimescale: UInt32,
                                 totalFrames: Int64) -> AudioFilePacketTableInfo? {
        let version = moov[elst.lowerBound]
        let entries = Int(moov.be(elst.lowerBound + 4, UInt32.self))
        let entrySize = version == 1 ? 20 : 12
        for e in 0..<min(entries, 16) {
            let at = elst.lowerBound + 8 + entrySize * e
            guard at + entrySize <= elst.upperBound else { return nil }
            let duration = version == 1 ? Int64(bitPattern: moov.be(at, UInt64.self)) : Int64(moov.be(at, UInt32.self))
            let mediaTime = version == 1 ? Int64(bitPattern: moov.be(at + 8, UInt64.self)) : Int64(Int32(bitPattern: moov.be(at + 4, UInt32.self)))
            guard mediaTime >= 0 else { continue }
            // The file's own numbers: a product past 64 bits is a damaged header, not a trap.
            let scaled = duration.multipliedReportingOverflow(by: Int64(mediaTimescale))
            guard movieTimescale > 0, !scaled.overflow else { return nil }
            let valid = scaled.partialValue / Int64(movieTimescale)
            guard mediaTime <= totalFrames, valid >= 0, valid <= totalFrames - mediaTime, mediaTime <= Int64(Int32.max) else { return nil }
            return AudioFilePacketTableInfo(mNumberValidFrames: valid, mPrimingFrames: Int32(mediaTime),
                                            mRemainderFrames: Int32(clamping: totalFrames - mediaTime - valid))
        }
        return nil
    }
}
