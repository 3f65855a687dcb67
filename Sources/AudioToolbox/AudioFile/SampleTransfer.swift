import SoundFile

/// How the bytes of a file's data format (its ASBD) move to and from libsndfile.
///
/// `.raw` is used wherever the file stores exactly those bytes (uncompressed PCM, float, µ-law,
/// A-law), so every byte round-trips. The other cases convert exactly between the ASBD's
/// packed samples and libsndfile's typed frames, for encoded files (FLAC, Ogg, MP3, ADPCM...).
enum SampleTransfer: Equatable, Sendable {
    /// `sf_read_raw` / `sf_write_raw`: the data bytes are the file's bytes.
    case raw
    /// Through left-justified `Int32` frames (`sf_readf_int`); packed `bits`-bit samples.
    case integer(bits: Int, bigEndian: Bool)
    /// Through `Float` frames (`sf_readf_float`, normalised ±1.0).
    case float32(bigEndian: Bool)
    /// Through `Double` frames.
    case float64(bigEndian: Bool)

    /// Reads `frames` frames into `buffer`, packed in the data format.
    func read(_ file: SoundFile, frames: Int, bytesPerFrame: Int, into buffer: UnsafeMutableRawPointer) -> SoundFile.Transfer {
        let samples = frames * file.info.channelCount
        switch self {
        case .raw:
            let moved = file.readRaw(into: UnsafeMutableRawBufferPointer(start: buffer, count: frames * bytesPerFrame))
            return SoundFile.Transfer(count: moved.count / bytesPerFrame, error: moved.error)
        case .integer(let bits, let bigEndian):
            var scratch = [Int32](repeating: 0, count: samples)
            let moved = scratch.withUnsafeMutableBufferPointer { file.readFrames(into: $0) }
            Self.pack(scratch[..<(moved.count * file.info.channelCount)], bits: bits, bigEndian: bigEndian, into: buffer)
            return moved
        case .float32(let bigEndian):
            return Self.readFloating(Float.self, file, samples: samples, bigEndian: bigEndian, into: buffer)
        case .float64(let bigEndian):
            return Self.readFloating(Double.self, file, samples: samples, bigEndian: bigEndian, into: buffer)
        }
    }

    /// Writes `frames` frames of packed data-format bytes: Audio File Services' writes and take
    /// files' alike. Stored bytes go in pieces of at most 256 KiB (whole frames): one huge
    /// write costs the kernel far more per byte than several cache-sized ones (measured with
    /// 6 MiB writes: 3.5× the system time, 0.57 s against 0.16 s for 20 s of 64 tracks).
    /// Encoded files take typed frames through a scratch buffer of at most 4096 frames.
    /// - Returns: frames written; the error that stopped a short write.
    func write(_ file: SoundFile, frames: Int, bytesPerFrame: Int, from bytes: UnsafeRawPointer) -> SoundFile.Transfer {
        let piece = self == .raw ? max(1, (256 << 10) / bytesPerFrame) : Self.scratchFrames
        var done = 0
        while done < frames {
            let count = min(piece, frames - done)
            let moved = writePiece(file, frames: count, bytesPerFrame: bytesPerFrame, from: bytes + done * bytesPerFrame)
            done += moved.count
            if moved.count < count { return SoundFile.Transfer(count: done, error: moved.error) }
        }
        return SoundFile.Transfer(count: done, error: nil)
    }

    /// Frames an encoded write converts at a time.
    static let scratchFrames = 4096

    private func writePiece(_ file: SoundFile, frames: Int, bytesPerFrame: Int, from bytes: UnsafeRawPointer) -> SoundFile.Transfer {
        let samples = frames * file.info.channelCount
        switch self {
        case .raw:
            let moved = file.writeRaw(UnsafeRawBufferPointer(start: bytes, count: frames * bytesPerFrame))
            return SoundFile.Transfer(count: moved.count / bytesPerFrame, error: moved.error)
        case .integer(let bits, let bigEndian):
            return withUnsafeTemporaryAllocation(of: Int32.self, capacity: samples) { scratch in
                Self.unpack(bytes, samples: samples, bits: bits, bigEndian: bigEndian, into: scratch)
                return file.writeFrames(UnsafeBufferPointer(scratch))
            }
        case .float32(let bigEndian):
            return Self.writeFloating(Float.self, file, samples: samples, bigEndian: bigEndian, from: bytes)
        case .float64(let bigEndian):
            return Self.writeFloating(Double.self, file, samples: samples, bigEndian: bigEndian, from: bytes)
        }
    }

    // MARK: Conversions

    /// Packs left-justified samples into `bits`-bit integers of the given byte order.
    static func pack(_ samples: ArraySlice<Int32>, bits: Int, bigEndian: Bool, into buffer: UnsafeMutableRawPointer) {
        let width = bits / 8
        var offset = 0
        for sample in samples {
            let value = UInt32(bitPattern: sample) >> UInt32(32 - bits)
            for byte in 0..<width {
                let shift = bigEndian ? (width - 1 - byte) * 8 : byte * 8
                buffer.storeBytes(of: UInt8(truncatingIfNeeded: value >> UInt32(shift)), toByteOffset: offset + byte, as: UInt8.self)
            }
            offset += width
        }
    }

    /// Unpacks `bits`-bit integers of the given byte order into left-justified samples.
    static func unpack(_ bytes: UnsafeRawPointer, samples: Int, bits: Int, bigEndian: Bool, into scratch: UnsafeMutableBufferPointer<Int32>) {
        // Little-endian 16 and 24 bits (FLAC takes) without the byte loop.
        switch (bits, bigEndian) {
        case (16, false):
            for index in 0..<samples { scratch[index] = Int32(Int16(littleEndian: bytes.loadUnaligned(fromByteOffset: 2 * index, as: Int16.self))) << 16 }
            return
        case (24, false):
            for index in 0..<samples {
                let p = bytes + 3 * index
                scratch[index] = (Int32(p.load(as: UInt8.self)) << 8 | Int32(p.load(fromByteOffset: 1, as: UInt8.self)) << 16
                    | Int32(p.load(fromByteOffset: 2, as: UInt8.self)) << 24)
            }
            return
        default: break
        }
        let width = bits / 8
        for index in 0..<samples {
            var value: UInt32 = 0
            for byte in 0..<width {
                let shift = bigEndian ? (width - 1 - byte) * 8 : byte * 8
                value |= UInt32(bytes.load(fromByteOffset: index * width + byte, as: UInt8.self)) << UInt32(shift)
            }
            scratch[index] = Int32(bitPattern: value << UInt32(32 - bits))
        }
    }

    private static func readFloating<Sample: SoundFileSample & BinaryFloatingPoint>(
        _: Sample.Type, _ file: SoundFile, samples: Int, bigEndian: Bool, into buffer: UnsafeMutableRawPointer
    ) -> SoundFile.Transfer {
        // Through an aligned scratch buffer: the caller's bytes need not be aligned for `Sample`.
        var scratch = [Sample](repeating: 0, count: samples)
        let moved = scratch.withUnsafeMutableBufferPointer { file.readFrames(into: $0) }
        let count = moved.count * file.info.channelCount
        scratch.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: count * MemoryLayout<Sample>.size) }
        if bigEndian { swapBytes(buffer, count: count, width: MemoryLayout<Sample>.size) }
        return moved
    }

    private static func writeFloating<Sample: SoundFileSample & BinaryFloatingPoint>(
        _: Sample.Type, _ file: SoundFile, samples: Int, bigEndian: Bool, from bytes: UnsafeRawPointer
    ) -> SoundFile.Transfer {
        withUnsafeTemporaryAllocation(of: Sample.self, capacity: samples) { scratch in
            UnsafeMutableRawBufferPointer(scratch).copyMemory(from: UnsafeRawBufferPointer(start: bytes, count: samples * MemoryLayout<Sample>.size))
            if bigEndian { swapBytes(scratch.baseAddress!, count: samples, width: MemoryLayout<Sample>.size) }
            // Float samples go to the lossy encoders only (MP3, Vorbis, Opus), which abort
            // (libmp3lame: "calc_energy: Assertion `el >= 0'") or write noise on NaN, infinity
            // and values whose energy overflows a float (FLT_MAX).
            for index in scratch.indices {
                scratch[index] = Self.encodable(scratch[index])
            }
            return file.writeFrames(UnsafeBufferPointer(scratch))
        }
    }

    /// The most a sample given to a lossy encoder may be: +24 dBFS, room for over-range
    /// masters, far from where the encoders' arithmetic overflows.
    static let encoderPeak = 16.0

    /// What a sample is written to a lossy encoder as: NaN is silence (0), ±infinity is full
    /// scale (±1), finite samples beyond ±``encoderPeak`` are clamped to it.
    static func encodable<Sample: BinaryFloatingPoint>(_ sample: Sample) -> Sample {
        if sample.isNaN { return 0 }
        if sample.isInfinite { return sample > 0 ? 1 : -1 }
        return min(max(sample, -Sample(encoderPeak)), Sample(encoderPeak))
    }

    /// Reverses the byte order of `count` values of `width` bytes in place.
    private static func swapBytes(_ buffer: UnsafeMutableRawPointer, count: Int, width: Int) {
        let bytes = buffer.assumingMemoryBound(to: UInt8.self)
        for index in 0..<count {
            var value = UnsafeMutableBufferPointer(start: bytes + index * width, count: width)
            value.reverse()
        }
    }
}
