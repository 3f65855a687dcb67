internal import CFFmpeg

/// The audio stream of a file libavformat opened: what its header says and where each of its
/// packets lies in the file.
///
/// The packets are listed once, at open, by reading the whole file through the demuxer (their
/// data is not kept): Audio File Services then reads a packet's bytes straight from the file at
/// `position`, so a packet read is one `pread` and the demuxer holds no state between calls.
public struct MediaFileIndex: Sendable {
    /// One packet of the stream.
    public struct Packet: Sendable, Equatable {
        /// Where the packet's bytes start in the file.
        public var position: Int64
        /// The packet's size in bytes.
        public var byteCount: Int
        /// Frames the packet decodes to, at the stream's sample rate (0 when the container does
        /// not say).
        public var frameCount: Int64
    }

    /// libavformat's short name of the container ("mov,mp4,m4a,3gp,3g2,mj2", "aac", "mp3", "caf").
    public var containerName: String
    /// The stream's codec; nil for a codec jaq has no packet coder for (`codecName` names it).
    public var codec: Codec?
    /// FFmpeg's short name of the stream's codec ("aac", "ac3"), for messages.
    public var codecName: String
    public var sampleRate: Int
    public var channelCount: Int
    /// The codec's configuration as the container stores it (AudioSpecificConfig for AAC in MP4,
    /// the 'alac' atom for ALAC); empty when there is none.
    public var extradata: [UInt8]
    /// Frames per packet the codec declares (0 when it does not).
    public var frameSize: Int
    /// Bits per sample of the source for lossless codecs (0 when unknown).
    public var bitsPerRawSample: Int
    /// The stream's bit rate in bits per second (0 when unknown).
    public var bitRate: Int64
    public var packets: [Packet]
    /// Frames at the start that the decoder's output must drop (encoder delay), from the
    /// container's edit list or gapless header.
    public var primingFrames: Int64
    /// Frames at the end of the last packet that are padding.
    public var remainderFrames: Int64
}

/// Reads the packet index of the first audio stream of a file through libavformat.
public enum MediaFileReader {
    /// The most packets an index may hold: 2^27 packets of 1024 frames are 31 hours at 48 kHz
    /// and take 3 GiB of index; a header claiming more is damaged.
    public static let packetLimit = 1 << 27

    /// Opens `path`, finds its first audio stream and lists its packets.
    /// - Throws: `FFmpegError` when libavformat cannot open or read the file, or it has no
    ///   audio stream (AVERROR_STREAM_NOT_FOUND); AVERROR_INVALIDDATA for an index beyond
    ///   ``packetLimit`` or packets outside the file.
    public static func index(path: String, fileByteCount: Int64) throws(FFmpegError) -> MediaFileIndex {
        FFmpegLog.quiet
        var context: UnsafeMutablePointer<AVFormatContext>? = nil
        var status = avformat_open_input(&context, path, nil, nil)
        guard status >= 0, let context else { throw FFmpegError(status, "avformat_open_input") }
        defer { var closing: UnsafeMutablePointer<AVFormatContext>? = context; avformat_close_input(&closing) }
        status = avformat_find_stream_info(context, nil)
        guard status >= 0 else { throw FFmpegError(status, "avformat_find_stream_info") }
        let streamIndex = av_find_best_stream(context, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        guard streamIndex >= 0, let stream = context.pointee.streams[Int(streamIndex)],
              let parameters = stream.pointee.codecpar
        else { throw FFmpegError(streamIndex < 0 ? streamIndex : jaq_averror_invaliddata(), "av_find_best_stream") }
        let par = parameters.pointee
        let sampleRate = Int(par.sample_rate)
        guard sampleRate > 0, par.ch_layout.nb_channels > 0 else {
            throw FFmpegError(jaq_averror_invaliddata(), "the audio stream has no sample rate or channels")
        }
        var index = MediaFileIndex(
            containerName: context.pointee.iformat.map { String(cString: $0.pointee.name) } ?? "",
            codec: Codec(par.codec_id), codecName: Codec.name(par.codec_id), sampleRate: sampleRate, channelCount: Int(par.ch_layout.nb_channels),
            extradata: par.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(max(par.extradata_size, 0)))) } ?? [],
            frameSize: Int(max(par.frame_size, 0)), bitsPerRawSample: Int(max(par.bits_per_raw_sample, 0)),
            bitRate: max(par.bit_rate, 0), packets: [], primingFrames: 0, remainderFrames: 0)
        // Every other stream is skipped by the demuxer, not read and dropped.
        for other in 0..<Int(context.pointee.nb_streams) where other != Int(streamIndex) {
            context.pointee.streams[other]?.pointee.discard = AVDISCARD_ALL
        }
        guard let packet = av_packet_alloc() else { throw FFmpegError(jaq_averror_enomem(), "av_packet_alloc") }
        defer { var freeing: UnsafeMutablePointer<AVPacket>? = packet; av_packet_free(&freeing) }
        let timeBase = stream.pointee.time_base
        let sampleTime = AVRational(num: 1, den: Int32(clamping: sampleRate))
        var firstTimestamp: Int64?
        while true {
            status = av_read_frame(context, packet)
            if status == jaq_averror_eof() { break }
            guard status >= 0 else { throw FFmpegError(status, "av_read_frame") }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex else { continue }
            let position = packet.pointee.pos
            let size = Int(packet.pointee.size)
            guard position >= 0, size > 0, position <= fileByteCount - Int64(size) else {
                throw FFmpegError(jaq_averror_invaliddata(), "a packet lies outside the file")
            }
            guard index.packets.count < packetLimit else {
                throw FFmpegError(jaq_averror_invaliddata(), "more than \(packetLimit) packets")
            }
            let duration = packet.pointee.duration > 0 ? av_rescale_q(packet.pointee.duration, timeBase, sampleTime) : 0
            index.packets.append(.init(position: position, byteCount: size, frameCount: duration))
            if firstTimestamp == nil, packet.pointee.pts != jaq_av_nopts_value() {
                firstTimestamp = av_rescale_q(packet.pointee.pts, timeBase, sampleTime)
            }
            var sideSize = 0
            if let skip = av_packet_get_side_data(packet, AV_PKT_DATA_SKIP_SAMPLES, &sideSize), sideSize >= 8 {
                let raw = UnsafeRawPointer(skip)
                let start = Int64(UInt32(littleEndian: raw.loadUnaligned(as: UInt32.self)))
                let end = Int64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
                // Skips at the start count only on the first packets (the demuxer may repeat
                // them); skips at the end are the last packets' padding (an MP3's padding
                // reaches into the packet before the last when the encoder padded a lot).
                if index.packets.count <= 2, start > 0 { index.primingFrames += start }
                if end > 0 { index.remainderFrames += end }
            }
        }
        // An edit list that starts the stream later (pts of the first packet negative) is
        // priming the demuxer did not mark with side data.
        if index.primingFrames == 0, let firstTimestamp, firstTimestamp < 0 { index.primingFrames = -firstTimestamp }
        return index
    }
}
