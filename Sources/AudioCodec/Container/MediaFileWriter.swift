internal import CFFmpeg
import Glibc

/// Writes packets of one audio stream into a container through libavformat (MPEG-4 audio:
/// .m4a, .mp4), for Audio File Services' AudioFileWritePackets.
///
/// The container's header is written with the first packet (the codec configuration and the
/// priming must be known then); the last packet is held back until `finish` so that the
/// remainder frames can still be set, and `finish` writes the index (the 'moov' atom).
///
/// A crash-safe writer writes fragmented MPEG-4 instead (an empty 'moov', then a 'moof'
/// fragment about every second, flushed to the file), so that a file whose writer was killed
/// opens up to its last fragment; `finish` then rewrites it, packets copied and not
/// re-encoded, into a regular MPEG-4 file with its exact edit list, which replaces the
/// fragmented one atomically (a temporary name in the same directory, fsync, rename).
///
/// Thread safety: none; the owner serialises calls.
public final class MediaFileWriter {
    /// What the stream holds: the codec (format ID, rate, channels, frames per packet), its
    /// configuration in the container's form (AudioSpecificConfig for AAC, the 'alac' atom for
    /// ALAC) and the source's bits for lossless codecs.
    public struct Stream: Sendable {
        public var format: CodecFormat
        public var extradata: [UInt8]
        public var bitsPerRawSample: Int

        public init(format: CodecFormat, extradata: [UInt8], bitsPerRawSample: Int) {
            self.format = format
            self.extradata = extradata
            self.bitsPerRawSample = bitsPerRawSample
        }
    }

    private let path: String
    private let formatName: String
    /// Fragmented while written, rewritten as a regular file by `finish`.
    public let isCrashSafe: Bool
    /// What `start` was given, for the rewrite.
    private var stream: Stream?
    private var primingFrames: Int64 = 0
    /// Crash-safe writers: each packet's frames as written (the rewrite's exact durations),
    /// and the frames since the last fragment.
    private var packetFrames: [Int64] = []
    private var unflushedFrames: Int64 = 0
    /// Crash-safe writers: the file opened once more, to fsync each fragment (a power loss
    /// then keeps what a SIGKILL keeps).
    private var syncDescriptor: Int32 = -1
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// The packet not yet handed to the muxer, and its frame count.
    private var heldBack: (bytes: [UInt8], frames: Int64)?
    /// The next packet's presentation time in frames (negative during the priming).
    private var nextTimestamp: Int64 = 0

    /// Prepares to write `path` as `formatName` ("ipod" for .m4a, "mp4"); nothing is written
    /// until the first packet. `crashSafe` writes fragmented MPEG-4 until `finish`.
    public init(path: String, formatName: String, crashSafe: Bool = false) {
        self.path = path
        self.formatName = formatName
        self.isCrashSafe = crashSafe
    }

    deinit {
        close()
    }

    public var hasStarted: Bool { context != nil }

    /// Creates the file and writes its header.
    /// - Throws: `FFmpegError` when the muxer refuses the stream or the file cannot be created.
    public func start(_ stream: Stream, primingFrames: Int64) throws(FFmpegError) {
        FFmpegLog.quiet
        guard let codecID = Codec(formatID: stream.format.formatID)?.avCodecID else {
            throw FFmpegError(jaq_averror_einval(), "no codec for format \(CompressedFormat.name(stream.format.formatID))")
        }
        let sampleRate = Int32(clamping: Int(stream.format.sampleRate.rounded()))
        var context: UnsafeMutablePointer<AVFormatContext>? = nil
        var status = avformat_alloc_output_context2(&context, nil, formatName, path)
        guard status >= 0, let context else { throw FFmpegError(status, "avformat_alloc_output_context2") }
        self.context = context
        guard let avStream = avformat_new_stream(context, nil), let par = avStream.pointee.codecpar else {
            throw FFmpegError(jaq_averror_enomem(), "avformat_new_stream")
        }
        par.pointee.codec_type = AVMEDIA_TYPE_AUDIO
        par.pointee.codec_id = codecID
        par.pointee.sample_rate = sampleRate
        av_channel_layout_default(&par.pointee.ch_layout, Int32(clamping: stream.format.channelCount))
        par.pointee.frame_size = Int32(clamping: stream.format.framesPerPacket)
        par.pointee.bits_per_raw_sample = Int32(clamping: stream.bitsPerRawSample)
        if !stream.extradata.isEmpty {
            let padding = Int(jaq_av_input_buffer_padding_size())
            guard let extradata = av_mallocz(stream.extradata.count + padding)?.assumingMemoryBound(to: UInt8.self) else {
                throw FFmpegError(jaq_averror_enomem(), "av_mallocz")
            }
            extradata.initialize(from: stream.extradata, count: stream.extradata.count)
            par.pointee.extradata = extradata
            par.pointee.extradata_size = Int32(stream.extradata.count)
        }
        avStream.pointee.time_base = AVRational(num: 1, den: sampleRate)
        status = avio_open(&context.pointee.pb, path, 2 /* AVIO_FLAG_WRITE */)
        guard status >= 0 else { throw FFmpegError(status, "avio_open") }
        // The edit list that trims the priming and the remainder counts in the movie's
        // timescale (1000 by default): at the sample rate, a take of any length is exact.
        var options: OpaquePointer? = nil
        av_dict_set(&options, "movie_timescale", String(sampleRate), 0)
        // Fragments cut where `send` says (frag_custom), after a 'moov' without samples that
        // a reader needs no more of; each fragment's offsets count from its own 'moof'.
        if isCrashSafe { av_dict_set(&options, "movflags", "frag_custom+empty_moov+default_base_moof", 0) }
        status = avformat_write_header(context, &options)
        av_dict_free(&options)
        guard status >= 0 else { throw FFmpegError(status, "avformat_write_header") }
        if isCrashSafe {
            avio_flush(context.pointee.pb)
            syncDescriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        }
        guard let packet = av_packet_alloc() else { throw FFmpegError(jaq_averror_enomem(), "av_packet_alloc") }
        self.packet = packet
        self.stream = stream
        self.primingFrames = primingFrames
        // The fragmented file starts at 0: its priming is trimmed only by the rewrite.
        nextTimestamp = isCrashSafe ? 0 : -primingFrames
    }

    /// Queues one packet of `frames` frames; the one queued before it goes to the file.
    public func write(_ bytes: UnsafeRawBufferPointer, frames: Int64) throws(FFmpegError) {
        if let held = heldBack { try send(held.bytes, frames: held.frames) }
        heldBack = (Array(bytes), frames)
    }

    /// Writes the held-back last packet shortened by `remainderFrames`, then the index, and
    /// closes the file.
    /// A crash-safe writer then rewrites the file as a regular one (see the type's summary);
    /// if that fails, the fragmented file stays and the error is thrown.
    public func finish(remainderFrames: Int64) throws(FFmpegError) {
        guard let context else { return }
        do {
            defer { close() }
            if let held = heldBack {
                heldBack = nil
                try send(held.bytes, frames: max(held.frames - remainderFrames, 1))
            }
            let status = av_write_trailer(context)
            guard status >= 0 else { throw FFmpegError(status, "av_write_trailer") }
        }
        if isCrashSafe, let stream { try rewriteUnfragmented(stream) }
    }

    /// Copies the fragmented file's packets into a regular MPEG-4 file with the priming and
    /// durations it was written with, and puts that file in its place.
    private func rewriteUnfragmented(_ stream: Stream) throws(FFmpegError) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = "\(directory.isEmpty ? "" : directory)/.\(name).\(getpid()).tmp"
        let source = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { throw FFmpegError(-errno, "open \(path)") }
        defer { Glibc.close(source) }
        var status = stat()
        guard fstat(source, &status) == 0 else { throw FFmpegError(-errno, "fstat \(path)") }
        // A file without packets has nothing to read back (libavformat may find no stream).
        let packets = packetFrames.isEmpty ? [] : try MediaFileReader.index(path: path, fileByteCount: Int64(status.st_size)).packets
        guard packets.count == packetFrames.count else {
            throw FFmpegError(jaq_averror_invaliddata(), "\(path) holds \(packets.count) packets, \(packetFrames.count) were written")
        }
        let rewrite = MediaFileWriter(path: temporary, formatName: formatName)
        do throws(FFmpegError) {
            try rewrite.start(stream, primingFrames: primingFrames)
            let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: packets.map(\.byteCount).max() ?? 0, alignment: 1)
            defer { bytes.deallocate() }
            for (packet, frames) in zip(packets, packetFrames) {
                let read = pread(source, bytes.baseAddress, packet.byteCount, off_t(packet.position))
                guard read == packet.byteCount else { throw FFmpegError(jaq_averror_invaliddata(), "reading \(path)") }
                try rewrite.write(UnsafeRawBufferPointer(rebasing: bytes[..<packet.byteCount]), frames: frames)
            }
            try rewrite.finish(remainderFrames: 0)
            let written = Glibc.open(temporary, O_RDONLY | O_CLOEXEC)
            let synced = written >= 0 && fsync(written) == 0
            if written >= 0 { Glibc.close(written) }
            guard synced, rename(temporary, path) == 0 else { throw FFmpegError(-errno, "replacing \(path)") }
        } catch {
            rewrite.close()
            unlink(temporary)
            throw error
        }
        // The rename is durable once the directory is.
        let folder = Glibc.open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            Glibc.close(folder)
        }
    }

    private func send(_ bytes: [UInt8], frames: Int64) throws(FFmpegError) {
        guard let context, let packet else { throw FFmpegError(jaq_averror_einval(), "the writer is not started") }
        var status = av_new_packet(packet, Int32(bytes.count))
        guard status >= 0 else { throw FFmpegError(status, "av_new_packet") }
        defer { av_packet_unref(packet) }
        bytes.withUnsafeBytes { packet.pointee.data.update(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: bytes.count) }
        packet.pointee.stream_index = 0
        packet.pointee.pts = nextTimestamp
        packet.pointee.dts = nextTimestamp
        packet.pointee.duration = frames
        packet.pointee.flags = 1 // AV_PKT_FLAG_KEY: every audio packet decodes on its own
        nextTimestamp += frames
        status = av_write_frame(context, packet)
        guard status >= 0 else { throw FFmpegError(status, "av_write_frame") }
        guard isCrashSafe else { return }
        packetFrames.append(frames)
        unflushedFrames += frames
        // About a second a fragment: a killed writer loses at most that (and the held packet).
        if unflushedFrames >= Int64(stream?.format.sampleRate ?? 0) {
            unflushedFrames = 0
            status = av_write_frame(context, nil)
            guard status >= 0 else { throw FFmpegError(status, "av_write_frame (a fragment)") }
            avio_flush(context.pointee.pb)
            if syncDescriptor >= 0 { fsync(syncDescriptor) }
        }
    }

    /// Frees the muxer and closes the file (without an index if `finish` was not called).
    public func close() {
        if let context {
            if context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
            avformat_free_context(context)
            self.context = nil
        }
        if packet != nil { av_packet_free(&packet) }
        if syncDescriptor >= 0 { Glibc.close(syncDescriptor) }
        syncDescriptor = -1
        heldBack = nil
    }
}
