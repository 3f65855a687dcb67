internal import CFFmpeg
import Glibc
import QueueCore

/// One encoded packet: its bytes and the frames it holds.
public struct EncodedPacket: Sendable {
    public var bytes: [UInt8]
    public var frames: Int
    /// Stream time of its first frame (negative for the encoder's priming).
    public var presentationFrame: Int64
}

/// Encodes planar Float32 into packets of one compressed format (AAC-LC, ALAC, FLAC, Opus,
/// IMA4) through libavcodec. Input in any amount; packets come out whole, in order.
public final class PacketEncoder {
    public let format: CodecFormat
    public let channelCount: Int
    /// Frames in each packet (the last may hold fewer).
    public let framesPerPacket: Int
    /// Frames of encoder delay at the start of the stream (Apple's kAudioConverterPrimeInfo leadingFrames).
    public let primingFrames: Int
    /// Bits per second (0 for lossless and IMA4).
    public let bitRate: Int
    /// The source bits a lossless format keeps (16 or 24), else 0.
    public let sourceBits: Int

    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var filled = 0
    private var finished = false
    private var framesIn: Int64 = 0
    private let padsLastFrame: Bool
    private var ready: [EncodedPacket] = []
    private var readyHead = 0
    private var lastGiven: EncodedPacket?
    /// Lossless: the frames of each frame sent and not yet out as a packet.
    private var sentCounts: [Int] = []
    private var putBack: EncodedPacket?
    /// The largest packet so far.
    public private(set) var largestPacket = 0

    /// Opens the encoder for `format` (bit rate in bits per second; nil for the default,
    /// 64 kbit/s a channel for AAC, 48 for Opus).
    public init(format: CodecFormat, bitRate requestedBitRate: Int? = nil) throws(CodecError) {
        FFmpegLog.quiet
        let id = format.formatID
        guard CompressedFormat.encodable.contains(id), let codecID = Codec(formatID: id)?.avCodecID else {
            throw .codecNotFound("no encoder for format \(CompressedFormat.name(id))"
                + (CompressedFormat.isCompressed(id) ? " (jaq decodes it, but encodes only AAC-LC, ALAC, FLAC, Opus and IMA4)" : ""))
        }
        guard format.channelCount >= 1, format.channelCount <= (id == CompressedFormat.opus ? 8 : 8) else {
            throw .unsupportedFormat("\(format.channelCount) channels (1...8)")
        }
        let rate = Int(format.sampleRate.rounded())
        guard rate >= 8000, rate <= 384_000 else { throw .unsupportedFormat("sample rate \(format.sampleRate)") }
        let codec = codecID == AV_CODEC_ID_OPUS ? (avcodec_find_encoder_by_name("libopus") ?? avcodec_find_encoder(codecID))
            : avcodec_find_encoder(codecID)
        guard let codec else { throw .codecNotFound("this FFmpeg has no encoder for \(CompressedFormat.name(id))") }
        self.format = format
        channelCount = format.channelCount
        var bits = 0
        if id == CompressedFormat.appleLossless || id == CompressedFormat.flac {
            bits = CompressedFormat.losslessBits(flags: format.formatFlags) ?? 16
            guard bits == 16 || bits == 24 else {
                throw .unsupportedFormat("\(bits)-bit source data (16 or 24 for \(CompressedFormat.name(id)))")
            }
        }
        sourceBits = bits
        if id == CompressedFormat.opus, ![8000, 12000, 16000, 24000, 48000].contains(rate) {
            throw .unsupportedFormat("Opus at \(rate) Hz (8000, 12000, 16000, 24000 or 48000)")
        }
        let lossy = id == CompressedFormat.mpeg4AAC || id == CompressedFormat.opus
        bitRate = lossy ? (requestedBitRate ?? format.channelCount * (id == CompressedFormat.opus ? 48_000 : 64_000)) : 0
        guard let context = avcodec_alloc_context3(codec) else { throw .failed("avcodec_alloc_context3") }
        self.context = context
        context.pointee.sample_rate = Int32(rate)
        context.pointee.time_base = AVRational(num: 1, den: Int32(rate))
        av_channel_layout_default(&context.pointee.ch_layout, Int32(format.channelCount))
        context.pointee.sample_fmt = Self.sampleFormat(codec, wantsInt32: bits > 16)
        guard SampleFormatBridge.handles(context.pointee.sample_fmt) else {
            throw .unsupportedFormat("the encoder's sample format")
        }
        if bits > 0 { context.pointee.bits_per_raw_sample = Int32(bits) }
        if lossy { context.pointee.bit_rate = Int64(bitRate) }
        if id == CompressedFormat.appleLossless || id == CompressedFormat.flac {
            context.pointee.frame_size = 4096
        }
        if id == CompressedFormat.opus {
            context.pointee.frame_size = Int32(CompressedFormat.defaultFramesPerPacket(id, sampleRate: format.sampleRate))
        }
        context.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER)
        if id == CompressedFormat.mpeg4AAC, let options = context.pointee.priv_data {
            // FFmpeg's "fast" coder keeps the waveform far better than its default "twoloop" at the
            // same rate (stereo tones at 128 kbit/s: 72 dB against 27 dB SNR, measured in Docs/codecs.md).
            av_opt_set(options, "aac_coder", "fast", 0)
        }
        let opened = avcodec_open2(context, codec, nil)
        guard opened >= 0 else { throw .unsupportedFormat("\(FFmpegError(opened, "avcodec_open2"))") }
        let frameSize = Int(context.pointee.frame_size)
        framesPerPacket = frameSize > 0 ? frameSize : CompressedFormat.defaultFramesPerPacket(id, sampleRate: format.sampleRate)
        primingFrames = Int(context.pointee.initial_padding)
        padsLastFrame = (codec.pointee.capabilities & Int32(AV_CODEC_CAP_SMALL_LAST_FRAME)) == 0
            && (codec.pointee.capabilities & Int32(AV_CODEC_CAP_VARIABLE_FRAME_SIZE)) == 0
        packet = av_packet_alloc()
        frame = av_frame_alloc()
        guard packet != nil, let frame else { throw .failed("av_frame_alloc") }
        frame.pointee.nb_samples = Int32(framesPerPacket)
        frame.pointee.format = context.pointee.sample_fmt.rawValue
        frame.pointee.sample_rate = Int32(rate)
        av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout)
        guard av_frame_get_buffer(frame, 0) >= 0 else { throw .failed("av_frame_get_buffer") }
    }

    deinit {
        avcodec_free_context(&context)
        av_packet_free(&packet)
        av_frame_free(&frame)
    }

    private static func sampleFormat(_ codec: UnsafePointer<AVCodec>, wantsInt32: Bool) -> AVSampleFormat {
        var offered: [AVSampleFormat] = []
        if var p = codec.pointee.sample_fmts {
            while p.pointee != AV_SAMPLE_FMT_NONE {
                offered.append(p.pointee)
                p += 1
            }
        }
        let preference = wantsInt32
            ? [AV_SAMPLE_FMT_S32P, AV_SAMPLE_FMT_S32, AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_FLT]
            : [AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_FLT, AV_SAMPLE_FMT_S16P, AV_SAMPLE_FMT_S16, AV_SAMPLE_FMT_S32P, AV_SAMPLE_FMT_S32]
        return preference.first(where: offered.contains) ?? offered.first ?? AV_SAMPLE_FMT_FLTP
    }

    /// The codec's configuration as Apple's magic cookie (esds for AAC, ALACSpecificConfig, dfLa body, OpusHead).
    public var cookie: [UInt8] {
        guard let context, context.pointee.extradata_size > 0, let data = context.pointee.extradata else { return [] }
        let extradata = Array(UnsafeBufferPointer(start: data, count: Int(context.pointee.extradata_size)))
        return MagicCookie.cookie(formatID: format.formatID, extradata: extradata, averageBitRate: bitRate,
                                  maximumPacketSize: maximumPacketSize)
    }

    /// An upper bound of any packet's size (Apple's MaximumOutputPacketSize).
    public var maximumPacketSize: Int {
        switch format.formatID {
        case CompressedFormat.appleIMA4: 34 * channelCount
        // Lossless packets at worst hold the samples verbatim, plus headers.
        case CompressedFormat.appleLossless, CompressedFormat.flac: framesPerPacket * channelCount * ((sourceBits + 7) / 8) + 64 * channelCount + 64
        // AAC: 6144 bits a channel per frame (ISO 14496-3); Opus: 1275 bytes a frame, up to 3 frames... per stream.
        case CompressedFormat.mpeg4AAC: 768 * channelCount
        default: max(largestPacket, 1275 * 3 * channelCount)
        }
    }

    /// Feeds `frames` frames; whole packets become available from `nextPacket`.
    public func encode(_ planes: UnsafePointer<UnsafePointer<Float>>, frames: Int) throws(CodecError) {
        guard !finished, let frame else { throw .failed("encoder finished") }
        var done = 0
        let table = UnsafeMutablePointer<UnsafePointer<Float>>.allocate(capacity: channelCount)
        defer { table.deallocate() }
        while done < frames {
            if filled == 0 { guard av_frame_make_writable(frame) >= 0 else { throw .failed("av_frame_make_writable") } }
            let count = min(frames - done, framesPerPacket - filled)
            for c in 0..<channelCount { table[c] = planes[c] + done }
            SampleFormatBridge.write(UnsafePointer(table), count: count, channels: channelCount, into: frame, at: filled)
            filled += count
            done += count
            if filled == framesPerPacket { try send(count: filled) }
        }
    }

    /// Encodes what is buffered and drains the encoder: the stream's last packets follow.
    public func finish() throws(CodecError) {
        guard !finished, let context, let frame else { return }
        if filled > 0 {
            if padsLastFrame { SampleFormatBridge.silence(frame, from: filled, channels: channelCount) }
            try send(count: padsLastFrame ? framesPerPacket : filled)
        }
        finished = true
        let result = avcodec_send_frame(context, nil)
        guard result >= 0 || result == jaq_averror_eof() else { throw .failed("\(FFmpegError(result, "flush"))") }
        try receive()
    }

    /// The next whole packet, oldest first.
    public func nextPacket() -> EncodedPacket? {
        if let back = putBack {
            putBack = nil
            lastGiven = back
            return back
        }
        guard readyHead < ready.count else { return nil }
        let packet = ready[readyHead]
        readyHead += 1
        if readyHead == ready.count {
            ready.removeAll(keepingCapacity: true)
            readyHead = 0
        }
        lastGiven = packet
        return packet
    }

    /// Puts back the packet `nextPacket` gave last (it did not fit where it was going).
    public func unread() {
        if let lastGiven { putBack = lastGiven }
        lastGiven = nil
    }

    /// Frames fed that have not come out in packets yet.
    public var bufferedFrames: Int { filled }

    private func send(count: Int) throws(CodecError) {
        guard let context, let frame else { return }
        frame.pointee.nb_samples = Int32(count)
        if sourceBits > 0 { sentCounts.append(count) }
        frame.pointee.pts = framesIn
        framesIn += Int64(count)
        let result = avcodec_send_frame(context, frame)
        frame.pointee.nb_samples = Int32(framesPerPacket)
        filled = 0
        guard result >= 0 else { throw .failed("\(FFmpegError(result, "avcodec_send_frame"))") }
        try receive()
    }

    private func receive() throws(CodecError) {
        guard let context, let packet else { return }
        while true {
            let result = avcodec_receive_packet(context, packet)
            if result == jaq_averror_eagain() || result == jaq_averror_eof() { return }
            guard result >= 0 else { throw .failed("\(FFmpegError(result, "avcodec_receive_packet"))") }
            defer { av_packet_unref(packet) }
            // FLAC's encoder ends with an empty packet carrying the final STREAMINFO as side data: no audio.
            guard packet.pointee.size > 0, let data = packet.pointee.data else { continue }
            let bytes = Array(UnsafeBufferPointer(start: data, count: Int(packet.pointee.size)))
            // Lossless encoders make one packet of each frame sent, with no delay: its frames are
            // the frame's (the last is short). Lossy ones say so in the packet's duration.
            var frames = packet.pointee.duration > 0 ? Int(packet.pointee.duration) : framesPerPacket
            if sourceBits > 0, !sentCounts.isEmpty { frames = sentCounts.removeFirst() }
            largestPacket = max(largestPacket, bytes.count)
            ready.append(EncodedPacket(bytes: bytes, frames: frames, presentationFrame: packet.pointee.pts))
        }
    }
}

/// An input queue's encoder: a PacketEncoder remade for each new stream (FFmpeg's encoders
/// cannot start over after their final flush). With a sample rate of 0 (the server's rate)
/// it opens once `open(sampleRate:)` names the rate.
public final class QueueEncoder: PacketEncoding {
    public private(set) var encoder: PacketEncoder?
    public private(set) var format: CodecFormat
    /// The requested bit rate (bits per second), nil for the codec's default.
    public private(set) var requestedBitRate: Int?

    public init(format: CodecFormat, bitRate: Int?) throws(CodecError) {
        self.format = format
        requestedBitRate = bitRate
        if format.sampleRate > 0 { encoder = try PacketEncoder(format: format, bitRate: bitRate) }
    }

    /// Whether the format has a bit rate to choose (AAC and Opus; the lossless ones and IMA4 do not).
    public var hasBitRate: Bool {
        format.formatID == CompressedFormat.mpeg4AAC || format.formatID == CompressedFormat.opus
    }

    /// The bit rate the encoder makes (bits per second), 0 for formats without one.
    public var bitRate: Int {
        guard hasBitRate else { return 0 }
        return encoder?.bitRate ?? requestedBitRate ?? 0
    }

    /// Chooses the bit rate of the next stream: the encoder is opened again with it (only
    /// between streams: the caller's queue is stopped). Throws, keeping the old rate, when the
    /// format has no bit rate or the codec refuses the rate.
    public func setBitRate(_ rate: Int) throws(CodecError) {
        guard hasBitRate else { throw .unsupportedFormat("\(CompressedFormat.name(format.formatID)) has no bit rate to set") }
        let channels = format.channelCount
        // Opus: 6-256 kbit/s a channel (libopus' range); AAC-LC: 8-320 kbit/s a channel.
        let range = format.formatID == CompressedFormat.opus ? (6_000 * channels)...(256_000 * channels)
            : (8_000 * channels)...(320_000 * channels)
        guard range.contains(rate) else {
            throw .unsupportedFormat("\(rate) bit/s (\(range.lowerBound)...\(range.upperBound) for \(channels) channel(s))")
        }
        if encoder != nil { encoder = try PacketEncoder(format: format, bitRate: rate) }
        requestedBitRate = rate
    }

    /// Opens the encoder at the server's rate (an ASBD rate of 0).
    public func open(sampleRate: Double) throws(CodecError) {
        guard encoder == nil else { return }
        format.sampleRate = sampleRate
        encoder = try PacketEncoder(format: format, bitRate: requestedBitRate)
    }

    public var framesPerPacket: Int {
        encoder?.framesPerPacket ?? CompressedFormat.defaultFramesPerPacket(format.formatID, sampleRate: format.sampleRate)
    }

    public func encodeFrames(_ planes: UnsafePointer<UnsafePointer<Float>>, frames: Int) -> Int32 {
        guard let encoder else { return CodecError.failed("").status }
        do { try encoder.encode(planes, frames: frames) } catch { return error.status }
        return 0
    }

    public func finishEncoding() -> Int32 {
        do { try encoder?.finish() } catch { return error.status }
        return 0
    }

    public func nextEncodedPacket() -> (bytes: [UInt8], frames: Int, streamFrame: Int64)? {
        guard let packet = encoder?.nextPacket() else { return nil }
        return (packet.bytes, packet.frames, packet.presentationFrame)
    }

    public func unreadPacket() { encoder?.unread() }

    public func resetEncoder() {
        guard encoder != nil, let fresh = try? PacketEncoder(format: format, bitRate: requestedBitRate) else { return }
        encoder = fresh
    }
}
