import AudioCodec
import Glibc

/// The encoder and file of an encoded take (AAC or ALAC in .m4a or .caf): the take's float
/// frames, from its first, go to the codecs of the queues (`PacketEncoder`), and its packets
/// to Audio File Services, as Apple's recording guide writes them — the magic cookie before
/// the first packet and again at the end, the packet table (the encoder's priming, the
/// frames of the take, the rest of the last packet) so every reader trims to the take's
/// exact frames. An .m4a take is written crash-safe (`kAudioFilePropertyJaqCrashSafeWrites`):
/// fragmented, and flushed to the disk a fragment a second, until its clean close rewrites it
/// as a regular MPEG-4 file.
///
/// Thread safety: one thread at a time (the take's writer).
final class EncodedTake {
    let path: String
    private let file: AudioFileID
    private let encoder: PacketEncoder
    private let channelCount: Int
    private var packets: Int64 = 0
    /// Frames in the packets written, the encoder's priming included.
    private var packetFrames: Int64 = 0
    private var framesIn: Int64 = 0
    private var closed = false
    /// One plane per channel, for the interleaved frames `write` is handed.
    private var planes: UnsafeMutablePointer<Float>
    private var planeCapacity = 0
    private let table: UnsafeMutablePointer<UnsafePointer<Float>>

    /// Creates the file (it must not exist) and opens the encoder.
    /// - Throws: `AudioTakeFileError` naming the file and why (a channel count or bit rate the
    ///   codec refuses, no such directory, a file that exists).
    init(path: String, encoding: AudioTakeFile.Format.Encoding, sampleRate: Double, channelCount: Int) throws(AudioTakeFileError) {
        let codec = CodecFormat(formatID: encoding.formatID, formatFlags: encoding.formatFlags, sampleRate: sampleRate,
                                channelCount: channelCount)
        do {
            encoder = try PacketEncoder(format: codec, bitRate: encoding.bitRate.map(Int.init))
        } catch {
            throw AudioTakeFileError(path: path, reason: "cannot encode \(channelCount) channel(s) at \(Int(sampleRate)) Hz: \(error)")
        }
        if encoding.bitRate != nil, encoder.bitRate > 0, let asked = encoding.bitRate, !Self.bitRates(channels: channelCount).contains(Int(asked)) {
            let range = Self.bitRates(channels: channelCount)
            throw AudioTakeFileError(path: path, reason: "\(asked / 1000) kbit/s for \(channelCount) channel(s): AAC takes "
                                     + "\(range.lowerBound / 1000)-\(range.upperBound / 1000) kbit/s (8-320 a channel)")
        }
        let format = AudioStreamBasicDescription(
            mSampleRate: sampleRate, mFormatID: encoding.formatID, mFormatFlags: encoding.formatFlags, mBytesPerPacket: 0,
            mFramesPerPacket: UInt32(encoder.framesPerPacket), mBytesPerFrame: 0, mChannelsPerFrame: UInt32(channelCount),
            mBitsPerChannel: 0, mReserved: 0)
        let created: AudioFileID
        do {
            created = try createAudioFile(path: path, fileType: encoding.fileType, format: format, flags: 0)
        } catch {
            let status = (error as? AudioToolboxError)?.status ?? kAudioFileUnspecifiedError
            let reason = status == -48 ? "exists" : (statusMessage(status) ?? "\(error)")
            throw AudioTakeFileError(path: path, reason: "cannot create it: \(reason)")
        }
        self.path = path
        self.file = created
        self.channelCount = channelCount
        planes = .allocate(capacity: 0)
        table = .allocate(capacity: channelCount)
        if encoding.fileType == kAudioFileM4AType {
            var crashSafe: UInt32 = 1
            try check(audioFileSetProperty(file, kAudioFilePropertyJaqCrashSafeWrites, 4, &crashSafe), "cannot write it crash-safe")
        }
        // The take's first frame follows the encoder's priming.
        var packetTable = AudioFilePacketTableInfo(mNumberValidFrames: 0, mPrimingFrames: Int32(encoder.primingFrames), mRemainderFrames: 0)
        try check(audioFileSetProperty(file, kAudioFilePropertyPacketTableInfo, UInt32(MemoryLayout<AudioFilePacketTableInfo>.size), &packetTable),
                  "cannot set its priming")
        try copyCookie()
    }

    deinit {
        planes.deallocate()
        table.deallocate()
    }

    /// AAC's bit rates for `channels` channels (bits per second): 8 to 320 kbit/s a channel.
    static func bitRates(channels: Int) -> ClosedRange<Int> { (8_000 * channels)...(320_000 * channels) }

    /// Encodes `frames` interleaved frames and writes the packets they complete.
    func write(_ samples: UnsafePointer<Float>, frames: Int) throws(AudioTakeFileError) {
        // One channel is its own plane.
        guard channelCount > 1 else { return try write(planes: samples, frames: frames) }
        if planeCapacity < frames * channelCount {
            planes.deallocate()
            planeCapacity = frames * channelCount
            planes = .allocate(capacity: planeCapacity)
        }
        for channel in 0..<channelCount {
            let plane = planes + channel * frames
            for t in 0..<frames { plane[t] = samples[t &* channelCount &+ channel] }
        }
        try write(planes: UnsafePointer(planes), frames: frames)
    }

    /// Encodes `frames` frames given as `channelCount` planes one after another from `planes`.
    func write(planes: UnsafePointer<Float>, frames: Int) throws(AudioTakeFileError) {
        for channel in 0..<channelCount { table[channel] = planes + channel * frames }
        do { try encoder.encode(table, frames: frames) } catch {
            throw AudioTakeFileError(path: path, reason: "the encoder failed: \(error)")
        }
        framesIn += Int64(frames)
        try writePackets()
    }

    /// Encodes the last frames, writes the cookie again and the packet table of the take's
    /// exact length, and closes the file.
    func close() throws(AudioTakeFileError) {
        guard !closed else { return }
        closed = true
        var failure: AudioTakeFileError?
        do throws(AudioTakeFileError) {
            // Every packet whole: ALAC's last is filled with silence that the packet table's
            // remainder leaves out, as AAC's encoder pads its own (a short last packet is not
            // read by every reader as short).
            let short = encoder.bufferedFrames > 0 ? encoder.framesPerPacket - encoder.bufferedFrames : 0
            if short > 0 {
                let silence = [Float](repeating: 0, count: short * channelCount)
                let counted = framesIn
                try silence.withUnsafeBufferPointer { samples throws(AudioTakeFileError) in try write(samples.baseAddress!, frames: short) }
                framesIn = counted
            }
            do { try encoder.finish() } catch { throw AudioTakeFileError(path: path, reason: "the encoder failed: \(error)") }
            try writePackets()
            try copyCookie()
            let remainder = max(0, packetFrames - Int64(encoder.primingFrames) - framesIn)
            var packetTable = AudioFilePacketTableInfo(mNumberValidFrames: framesIn, mPrimingFrames: Int32(encoder.primingFrames),
                                                       mRemainderFrames: Int32(clamping: remainder))
            if packets > 0 {
                try check(audioFileSetProperty(file, kAudioFilePropertyPacketTableInfo, UInt32(MemoryLayout<AudioFilePacketTableInfo>.size),
                                               &packetTable), "cannot set its length")
            }
        } catch {
            failure = error
        }
        let status = audioFileClose(file)
        if let failure { throw failure }
        try check(status, "cannot complete it")
    }

    /// Closes the file without finishing the take (a take abandoned before its close): what
    /// was written stays as the crash-safe writes left it.
    func abandon() {
        guard !closed else { return }
        closed = true
        _ = audioFileClose(file)
    }

    private func writePackets() throws(AudioTakeFileError) {
        while let packet = encoder.nextPacket() {
            let lastShort = packet.frames != encoder.framesPerPacket
            var description = AudioStreamPacketDescription(mStartOffset: 0, mVariableFramesInPacket: lastShort ? UInt32(packet.frames) : 0,
                                                           mDataByteSize: UInt32(packet.bytes.count))
            var one: UInt32 = 1
            let status = packet.bytes.withUnsafeBytes { bytes in
                audioFileWritePackets(file, 0, UInt32(bytes.count), &description, packets, &one, bytes.baseAddress)
            }
            try check(status, "writing stopped after \(packets) packets")
            packets += 1
            packetFrames += Int64(packet.frames)
        }
    }

    private func copyCookie() throws(AudioTakeFileError) {
        let cookie = encoder.cookie
        guard !cookie.isEmpty else { return }
        try check(cookie.withUnsafeBytes { audioFileSetProperty(file, kAudioFilePropertyMagicCookieData, UInt32($0.count), $0.baseAddress) },
                  "cannot write its magic cookie")
    }

    private func check(_ status: OSStatus, _ what: String) throws(AudioTakeFileError) {
        guard status != noErr else { return }
        let reason = statusMessage(status) ?? "error \(status)"
        throw AudioTakeFileError(path: path, reason: "\(what): \(reason)", isDiskFull: status == kAudioFileUnspecifiedError && errno == ENOSPC)
    }
}
