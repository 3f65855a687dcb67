import AudioCodec
import CAudioToolbox

/// ADTS AAC and MPEG audio (MP3) streams: frames one after another, each behind a header
/// that gives its length. ID3v2 tags (at the start or between frames) and ID3v1 tags are
/// skipped; an MP3's Xing/Info frame gives the packet and byte counts and the LAME header
/// the priming, and is not a packet. After a discontinuity the parser looks for the next
/// frame header that matches the stream's.
final class FrameStreamParser: StreamFormatParser {
    enum Kind { case adts, mp3 }
    let kind: Kind
    /// The first frame's header, once found: later frames must match its signature.
    private var first: MPEGFrameHeader?
    /// Whether bytes that are no frame came before the first frame.
    private var skippedJunk = false
    /// Whether the last seek said where the next bytes start (a discontinuity then loses no packet count).
    private var seeked = false
    /// The index of the next packet (for the packet offsets), nil after an inexact seek.
    private var nextPacket: Int64? = 0

    /// Bytes searched for the first frame before the stream is declared not this format.
    static let searchLimit = 64 * 1024

    init(kind: Kind) { self.kind = kind }

    private var headerBytes: Int { kind == .adts ? 7 : 4 }

    private func header(_ input: StreamBuffer, at i: Int) -> MPEGFrameHeader? {
        kind == .adts ? MPEGFrameHeader.adts(input, at: i) : MPEGFrameHeader.mpegAudio(input, at: i)
    }

    func parse(_ input: inout StreamBuffer, _ stream: AudioFileStreamObject) throws(AudioToolboxError) {
        while !input.isSkipping {
            if try skipTag(&input) { continue }
            guard input.count >= headerBytes else { return }
            guard let found = header(input, at: 0), first.map({ $0.signature == found.signature }) ?? true else {
                // Not a frame here (junk, a cut frame after a discontinuity): look further.
                input.consume(1)
                if first != nil { nextPacket = nil } else { skippedJunk = true }
                if first == nil, input.position > Int64(Self.searchLimit) {
                    throw AudioToolboxError(kAudioFileStreamError_UnsupportedFileType, "no \(kind == .adts ? "ADTS" : "MPEG audio") frame in the first 64 KiB")
                }
                continue
            }
            if first == nil {
                guard input.count >= found.length + (skippedJunk ? headerBytes : 0) else { return }
                // After junk a sync word may be chance: the next frame must follow and match.
                if skippedJunk, header(input, at: found.length)?.signature != found.signature {
                    input.consume(1)
                    continue
                }
                try start(with: found, &input, stream)
                continue
            }
            guard deliverFrames(&input, stream) else { return }
        }
    }

    /// Skips an ID3v2 tag or an ID3v1 tag at the front; false when there is none (or not enough bytes to tell).
    private func skipTag(_ input: inout StreamBuffer) throws(AudioToolboxError) -> Bool {
        guard input.count >= 3 else { return false }
        if input[0] == 0x49, input[1] == 0x44, input[2] == 0x33 {  // "ID3"
            guard input.count >= 10 else { return false }
            let size = (6..<10).reduce(Int64(0)) { $0 << 7 | Int64(input[$1] & 0x7F) }
            let footer: Int64 = input[5] & 0x10 != 0 ? 10 : 0
            input.skip(10 + size + footer)
            return true
        }
        if kind == .mp3, first != nil, input[0] == 0x54, input[1] == 0x41, input[2] == 0x47 {  // "TAG", ID3v1
            input.skip(128)
            return true
        }
        return false
    }

    /// The first frame: the header's properties, then ReadyToProducePackets.
    private func start(with found: MPEGFrameHeader, _ input: inout StreamBuffer, _ stream: AudioFileStreamObject) throws(AudioToolboxError) {
        first = found
        let format = AudioStreamBasicDescription(mSampleRate: found.sampleRate, mFormatID: found.formatID, mFormatFlags: 0,
                                                 mBytesPerPacket: 0, mFramesPerPacket: found.framesPerPacket, mBytesPerFrame: 0,
                                                 mChannelsPerFrame: found.channels, mBitsPerChannel: 0, mReserved: 0)
        var xing: (packets: UInt32?, bytes: UInt32?, delay: Int?, padding: Int?)?
        if kind == .mp3 { xing = MPEGFrameHeader.xing(input.bytes(0, found.length), header: found) }
        let frameStart = input.position
        var properties = [kAudioFileStreamProperty_FileFormat, kAudioFileStreamProperty_DataFormat]
        stream.header.fileFormat = kind == .adts ? kAudioFileAAC_ADTSType : kAudioFileMP3Type
        stream.header.dataFormat = format
        stream.header.packetSizeUpperBound = kind == .adts ? UInt32(768 * found.channels) : 1441
        if kind == .adts {
            let config = MPEGFrameHeader.audioSpecificConfig(input, at: 0)
            stream.header.magicCookie = MagicCookie.cookie(formatID: kAudioFormatMPEG4AAC, extradata: config, averageBitRate: 0,
                                                           maximumPacketSize: 768 * Int(found.channels))
            properties.append(kAudioFileStreamProperty_MagicCookieData)
        } else {
            stream.header.bitRate = found.bitRate
        }
        if let xing {
            input.consume(found.length)  // the Xing frame is no packet
            if let packets = xing.packets { stream.header.audioDataPacketCount = UInt64(packets) }
            if let bytes = xing.bytes, Int64(bytes) > Int64(found.length) {
                stream.header.audioDataByteCount = UInt64(Int64(bytes) - Int64(found.length))
            }
            if let packets = xing.packets, packets > 0, let bytes = stream.header.audioDataByteCount {
                stream.header.bitRate = UInt32(clamping: Int64(Double(bytes) * 8 * found.sampleRate / (Double(packets) * Double(found.framesPerPacket))))
            }
            if let delay = xing.delay, let padding = xing.padding, let packets = xing.packets {
                // As FFmpeg: the decoder's own 529-frame delay comes on top of the encoder's.
                let priming = Int32(delay + 529)
                let remainder = Int32(max(padding - 529, 0))
                let total = Int64(packets) * Int64(found.framesPerPacket)
                stream.header.packetTable = AudioFilePacketTableInfo(mNumberValidFrames: max(total - Int64(priming) - Int64(remainder), 0),
                                                                     mPrimingFrames: priming, mRemainderFrames: remainder)
                properties.append(kAudioFileStreamProperty_PacketTableInfo)
            }
        }
        stream.header.dataOffset = xing == nil ? frameStart : input.position
        properties.append(kAudioFileStreamProperty_DataOffset)
        if stream.header.audioDataByteCount != nil { properties.append(kAudioFileStreamProperty_AudioDataByteCount) }
        if stream.header.audioDataPacketCount != nil { properties.append(kAudioFileStreamProperty_AudioDataPacketCount) }
        if kind == .mp3 { properties.append(kAudioFileStreamProperty_BitRate) }
        stream.headerComplete(properties)
    }

    /// Delivers the whole frames the buffer holds, in one callback; false when there was none.
    private func deliverFrames(_ input: inout StreamBuffer, _ stream: AudioFileStreamObject) -> Bool {
        guard let first, let dataOffset = stream.header.dataOffset else { return false }
        var descriptions: [AudioStreamPacketDescription] = []
        var end = 0
        while input.count - end >= headerBytes {
            // A tag between frames ends this batch; the next parse skips it.
            if input[end] == 0x49, input[end + 1] == 0x44, input[end + 2] == 0x33 { break }
            if kind == .mp3, input[end] == 0x54, input[end + 1] == 0x41, input[end + 2] == 0x47 { break }
            guard let frame = header(input, at: end), frame.signature == first.signature else {
                break  // lost sync: the parse loop searches
            }
            guard input.count - end >= frame.length else { break }
            let description = AudioStreamPacketDescription(mStartOffset: Int64(end + frame.payloadOffset), mVariableFramesInPacket: 0,
                                                           mDataByteSize: UInt32(frame.length - frame.payloadOffset))
            if let next = nextPacket {
                if next == Int64(stream.header.packetOffsets.count) {
                    stream.header.packetOffsets.append(input.position + Int64(end) - dataOffset)
                    stream.header.packetSizes.append(UInt32(frame.length))
                }
                nextPacket = next + 1
            }
            descriptions.append(description)
            end += frame.length
        }
        guard !descriptions.isEmpty else { return false }
        let firstStart = Int(descriptions[0].mStartOffset)
        for i in descriptions.indices { descriptions[i].mStartOffset -= Int64(firstStart) }
        input.withUnsafeBytes { bytes in
            stream.deliver(UnsafeRawBufferPointer(rebasing: bytes[firstStart..<end]), count: descriptions.count, descriptions: &descriptions)
        }
        input.consume(end)
        return true
    }

    func seek(toPacket packet: Int64, _ stream: AudioFileStreamObject) throws(AudioToolboxError) -> (offset: Int64, estimated: Bool) {
        guard let dataOffset = stream.header.dataOffset else { throw AudioToolboxError(kAudioFileStreamError_DataUnavailable) }
        seeked = true
        if packet < Int64(stream.header.packetOffsets.count) {
            nextPacket = packet
            return (dataOffset + stream.header.packetOffsets[Int(packet)], false)
        }
        nextPacket = nil
        guard let average = stream.averageBytesPerPacket else { throw AudioToolboxError(kAudioFileStreamError_DataUnavailable) }
        return (dataOffset + Int64(min(Double(packet) * average, 9e18)), true)
    }

    func discontinuity(_ input: inout StreamBuffer, _ stream: AudioFileStreamObject) {
        if !seeked { nextPacket = nil }  // a partial packet was dropped: the count is lost
        seeked = false
    }
}
