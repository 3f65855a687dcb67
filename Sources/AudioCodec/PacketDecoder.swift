internal import CFFmpeg
import Glibc
import QueueCore

/// Decodes packets of one compressed stream (AAC-LC, HE-AAC, ALAC, MP3, FLAC, Opus, IMA4)
/// into planar Float32 through libavcodec. Runs on a queue thread or a converter's caller,
/// never on a realtime thread (FFmpeg allocates).
public final class PacketDecoder {
    public let format: CodecFormat
    public let channelCount: Int
    /// Frames a packet decodes to when nothing says otherwise (the silence a corrupt packet becomes).
    public let framesPerPacket: Int

    private var context: UnsafeMutablePointer<AVCodecContext>?
    /// What a reset opens again: the decoder and its extradata (the cookie, as FFmpeg takes it).
    private let codec: UnsafePointer<AVCodec>
    private let extradata: [UInt8]
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var padded: UnsafeMutableRawPointer
    private var paddedCapacity: Int
    private let outputPlanes: GrowablePlanes

    /// Opens the decoder for `format` with Apple's magic cookie (empty if the format has none).
    public init(format: CodecFormat, cookie: [UInt8]) throws(CodecError) {
        guard let codecID = Codec(formatID: format.formatID)?.avCodecID else {
            throw .codecNotFound("no decoder for format \(CompressedFormat.name(format.formatID))")
        }
        guard format.channelCount >= 1, format.channelCount <= 64 else {
            throw .unsupportedFormat("\(format.channelCount) channels")
        }
        guard format.sampleRate >= 1000, format.sampleRate <= 768_000 else {
            throw .unsupportedFormat("sample rate \(format.sampleRate)")
        }
        FFmpegLog.quiet
        // The float MP3 decoder, not the fixed-point one FFmpeg finds first.
        let codec = codecID == AV_CODEC_ID_MP3 ? (avcodec_find_decoder_by_name("mp3float") ?? avcodec_find_decoder(codecID))
            : avcodec_find_decoder(codecID)
        guard let codec else { throw .codecNotFound("this FFmpeg has no decoder for \(CompressedFormat.name(format.formatID))") }
        // The cookie is read before anything is allocated: an init that throws before every
        // stored property is set runs no deinit.
        let extradata = MagicCookie.explicitSBR(try MagicCookie.extradata(formatID: format.formatID, cookie: cookie),
                                                formatID: format.formatID, sampleRate: format.sampleRate)
        self.format = format
        channelCount = format.channelCount
        framesPerPacket = format.framesPerPacket > 0 ? format.framesPerPacket
            : CompressedFormat.defaultFramesPerPacket(format.formatID, sampleRate: format.sampleRate)
        paddedCapacity = 0
        padded = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 64)
        outputPlanes = GrowablePlanes(channelCount: format.channelCount)
        self.codec = codec
        self.extradata = extradata
        if extradata.isEmpty && format.formatID == CompressedFormat.appleLossless {
            throw .invalidCookie("ALAC needs its magic cookie (kAudioQueueProperty_MagicCookie)")
        }
        context = try Self.openContext(codec, format: format, extradata: extradata)
        packet = av_packet_alloc()
        frame = av_frame_alloc()
        guard packet != nil, frame != nil else { throw .failed("av_packet_alloc") }
    }

    deinit {
        avcodec_free_context(&context)
        av_packet_free(&packet)
        av_frame_free(&frame)
        padded.deallocate()
    }

    /// The planes of the last `decode` (valid until the next call).
    public var planes: UnsafePointer<UnsafeMutablePointer<Float>> { UnsafePointer(outputPlanes.planes) }

    /// Decodes one packet; returns the frames it gave (in `planes`). A packet the codec refuses
    /// throws `.corruptPacket` and leaves the decoder ready for the next one.
    public func decode(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> Int {
        guard let context, let packet, let frame else { throw .failed("decoder closed") }
        guard !bytes.isEmpty else { return 0 }
        // FFmpeg reads up to AV_INPUT_BUFFER_PADDING_SIZE past the data: give it a zeroed tail.
        let padding = Int(jaq_av_input_buffer_padding_size())
        if paddedCapacity < bytes.count + padding {
            padded.deallocate()
            paddedCapacity = bytes.count + padding
            padded = UnsafeMutableRawPointer.allocate(byteCount: paddedCapacity, alignment: 64)
        }
        padded.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        memset(padded + bytes.count, 0, padding)
        av_packet_unref(packet)
        packet.pointee.data = padded.assumingMemoryBound(to: UInt8.self)
        packet.pointee.size = Int32(bytes.count)
        let sent = avcodec_send_packet(context, packet)
        packet.pointee.data = nil
        packet.pointee.size = 0
        if sent < 0 && sent != jaq_averror_eagain() {
            drainAfterError()
            throw .corruptPacket(sent)
        }
        var total = 0
        while true {
            let received = avcodec_receive_frame(context, frame)
            if received == jaq_averror_eagain() || received == jaq_averror_eof() { break }
            if received < 0 {
                drainAfterError()
                throw .corruptPacket(received)
            }
            let count = Int(frame.pointee.nb_samples)
            outputPlanes.reserve(total + count)
            SampleFormatBridge.read(frame, from: 0, count: count, channels: channelCount, into: outputPlanes.planes, at: total)
            total += count
            av_frame_unref(frame)
        }
        return total
    }

    /// Silence of one packet's length in `planes` (what a corrupt packet plays as); returns its frames.
    public func silence(frames: Int? = nil) -> Int {
        let count = frames ?? framesPerPacket
        outputPlanes.reserve(count)
        for c in 0..<channelCount { outputPlanes.planes[c].update(repeating: 0, count: count) }
        return count
    }

    /// Forgets the stream so far (a seek, a queue reset, AudioConverterReset): the decoder is
    /// opened again, so what follows decodes as with a new one. (avcodec_flush_buffers is not
    /// enough: FFmpeg's AAC decoder keeps the previous window shape across it, and its first
    /// frames after a flush differ from a new decoder's.) A reset is a seek, not the stream's
    /// start: the new decoder does not drop a stream's leading samples (Opus's pre-skip) as
    /// one opened for the start does, so every packet still decodes to its whole length.
    /// Should opening fail, the old decoder is flushed and kept.
    public func reset() {
        guard let fresh = try? Self.openContext(codec, format: format, extradata: extradata, skipsLeadingSamples: false) else {
            if let context { avcodec_flush_buffers(context) }
            return
        }
        avcodec_free_context(&context)
        context = fresh
    }

    /// A decoder context for `format`, opened with `extradata`.
    private static func openContext(_ codec: UnsafePointer<AVCodec>, format: CodecFormat, extradata: [UInt8],
                                    skipsLeadingSamples: Bool = true) throws(CodecError) -> UnsafeMutablePointer<AVCodecContext> {
        guard let context = avcodec_alloc_context3(codec) else { throw .failed("avcodec_alloc_context3") }
        var opened = false
        defer {
            if !opened {
                var owned: UnsafeMutablePointer<AVCodecContext>? = context
                avcodec_free_context(&owned)
            }
        }
        context.pointee.sample_rate = Int32(format.sampleRate.rounded())
        av_channel_layout_default(&context.pointee.ch_layout, Int32(format.channelCount))
        if format.bytesPerPacket > 0 { context.pointee.block_align = Int32(format.bytesPerPacket) }
        // Leading samples are then only reported (side data jaq does not read), not dropped.
        if !skipsLeadingSamples { context.pointee.flags2 |= AV_CODEC_FLAG2_SKIP_MANUAL }
        if format.formatID == CompressedFormat.flac || format.formatID == CompressedFormat.appleLossless,
           let bits = CompressedFormat.losslessBits(flags: format.formatFlags) {
            context.pointee.bits_per_coded_sample = Int32(bits)
        }
        if !extradata.isEmpty {
            let padding = Int(jaq_av_input_buffer_padding_size())
            guard let memory = av_mallocz(extradata.count + padding) else { throw .failed("av_mallocz") }
            memory.copyMemory(from: extradata, byteCount: extradata.count)
            context.pointee.extradata = memory.assumingMemoryBound(to: UInt8.self)
            context.pointee.extradata_size = Int32(extradata.count)
        }
        let status = avcodec_open2(context, codec, nil)
        guard status >= 0 else {
            throw status == jaq_averror_invaliddata() ? .invalidCookie("\(FFmpegError(status, "avcodec_open2"))")
                : .unsupportedFormat("\(FFmpegError(status, "avcodec_open2"))")
        }
        opened = true
        return context
    }

    /// After a refused packet the codec starts over, so the stream after it decodes as it
    /// would on its own (no state half-updated by garbage carries on).
    private func drainAfterError() {
        if let context, let frame {
            while avcodec_receive_frame(context, frame) >= 0 { av_frame_unref(frame) }
            avcodec_flush_buffers(context)
        }
    }
}


extension PacketDecoder: PacketDecoding {
    public func decodePacket(_ bytes: UnsafeRawBufferPointer) -> (frames: Int, error: Int32) {
        do {
            return (try decode(bytes), 0)
        } catch {
            // The packet plays as one packet of silence.
            return (silence(), error.status)
        }
    }

    public var decodedPlanes: UnsafePointer<UnsafeMutablePointer<Float>> { planes }

    public func resetDecoder() { reset() }
}

extension CodecError {
    /// The OSStatus Apple's converters report for this error.
    public var status: Int32 {
        switch self {
        case .codecNotFound: -66673                 // kAudioQueueErr_CodecNotFound
        case .unsupportedFormat: 0x666D_743F        // 'fmt?'
        case .invalidCookie: 0x2164_6174            // '!dat' kAudioCodecUnsupportedFormatError
        case .corruptPacket: 0x6261_6461            // 'bada' kAudioCodecBadDataError
        case .failed: 0x7768_6174                   // 'what' kAudioCodecUnspecifiedError
        }
    }
}
