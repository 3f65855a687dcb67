internal import CFFmpeg

/// Moves samples between FFmpeg's frames (whatever sample format a codec uses) and planar
/// Float32, the engine's format. Integers map as SampleCodec maps them (x / 2^(n-1)), so
/// lossless codecs round-trip integer sources bit-exact: 16- and 24-bit samples fit a Float
/// exactly (24-bit ones are FFmpeg's S32 with the low 8 bits zero).
enum SampleFormatBridge {
    /// True for the sample formats `read` and `write` handle.
    static func handles(_ format: AVSampleFormat) -> Bool {
        [AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_FLT, AV_SAMPLE_FMT_S16P, AV_SAMPLE_FMT_S16, AV_SAMPLE_FMT_S32P,
         AV_SAMPLE_FMT_S32, AV_SAMPLE_FMT_DBLP, AV_SAMPLE_FMT_DBL].contains(format)
    }

    /// Copies `count` frames of `frame`, starting at `from`, into planes (channels beyond the
    /// frame's are silent; the frame's extra channels are left out).
    static func read(_ frame: UnsafeMutablePointer<AVFrame>, from: Int, count: Int, channels: Int,
                     into planes: UnsafePointer<UnsafeMutablePointer<Float>>, at offset: Int) {
        let format = AVSampleFormat(frame.pointee.format)
        let frameChannels = Int(frame.pointee.ch_layout.nb_channels)
        let planar = av_sample_fmt_is_planar(format) != 0
        guard let data = frame.pointee.extended_data else { return }
        for c in 0..<channels {
            let out = planes[c] + offset
            guard c < frameChannels else {
                out.update(repeating: 0, count: count)
                continue
            }
            let base = UnsafeRawPointer(data[planar ? c : 0]!)
            let stride = planar ? 1 : frameChannels
            let first = from * stride + (planar ? 0 : c)
            switch format {
            case AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_FLT:
                let p = base.assumingMemoryBound(to: Float.self) + first
                for i in 0..<count { out[i] = p[i * stride] }
            case AV_SAMPLE_FMT_S16P, AV_SAMPLE_FMT_S16:
                let p = base.assumingMemoryBound(to: Int16.self) + first
                for i in 0..<count { out[i] = Float(p[i * stride]) * (1 / 32768) }
            case AV_SAMPLE_FMT_S32P, AV_SAMPLE_FMT_S32:
                let p = base.assumingMemoryBound(to: Int32.self) + first
                for i in 0..<count { out[i] = Float(Double(p[i * stride]) * (1 / 2_147_483_648.0)) }
            case AV_SAMPLE_FMT_DBLP, AV_SAMPLE_FMT_DBL:
                let p = base.assumingMemoryBound(to: Double.self) + first
                for i in 0..<count { out[i] = Float(p[i * stride]) }
            default:
                out.update(repeating: 0, count: count)
            }
        }
    }

    /// Writes `count` frames of planes into `frame` at frame `at`, in the frame's sample format
    /// (integers rounded to nearest and clipped, as SampleCodec encodes).
    static func write(_ planes: UnsafePointer<UnsafePointer<Float>>, count: Int, channels: Int,
                      into frame: UnsafeMutablePointer<AVFrame>, at position: Int) {
        let format = AVSampleFormat(frame.pointee.format)
        let planar = av_sample_fmt_is_planar(format) != 0
        guard let data = frame.pointee.extended_data else { return }
        for c in 0..<channels {
            let input = planes[c]
            let base = UnsafeMutableRawPointer(data[planar ? c : 0]!)
            let stride = planar ? 1 : channels
            let first = position * stride + (planar ? 0 : c)
            switch format {
            case AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_FLT:
                let p = base.assumingMemoryBound(to: Float.self) + first
                for i in 0..<count { p[i * stride] = input[i] }
            case AV_SAMPLE_FMT_S16P, AV_SAMPLE_FMT_S16:
                let p = base.assumingMemoryBound(to: Int16.self) + first
                for i in 0..<count { p[i * stride] = Int16(clipping(input[i], full: 32768)) }
            case AV_SAMPLE_FMT_S32P, AV_SAMPLE_FMT_S32:
                let p = base.assumingMemoryBound(to: Int32.self) + first
                for i in 0..<count { p[i * stride] = Int32(clipping(input[i], full: 2_147_483_648)) }
            case AV_SAMPLE_FMT_DBLP, AV_SAMPLE_FMT_DBL:
                let p = base.assumingMemoryBound(to: Double.self) + first
                for i in 0..<count { p[i * stride] = Double(input[i]) }
            default:
                break
            }
        }
    }

    /// Silence in `frame` from frame `at` to its end (a short last frame padded for codecs that need whole frames).
    static func silence(_ frame: UnsafeMutablePointer<AVFrame>, from position: Int, channels: Int) {
        let format = AVSampleFormat(frame.pointee.format)
        let planar = av_sample_fmt_is_planar(format) != 0
        let bytes = Int(av_get_bytes_per_sample(format))
        let total = Int(frame.pointee.nb_samples)
        guard position < total, let data = frame.pointee.extended_data else { return }
        if planar {
            for c in 0..<channels { memset(data[c]! + position * bytes, 0, (total - position) * bytes) }
        } else {
            memset(data[0]! + position * bytes * channels, 0, (total - position) * bytes * channels)
        }
    }

    @inline(__always)
    private static func clipping(_ sample: Float, full: Double) -> Int64 {
        let scaled = (Double(sample) * full).rounded(.toNearestOrEven)
        return scaled.isNaN ? 0 : Int64(min(max(scaled, -full), full - 1))
    }
}
