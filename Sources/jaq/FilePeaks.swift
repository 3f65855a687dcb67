import AudioToolbox

/// The peak level of each channel of an audio file, as `jaq info` reports it: the file's
/// packets read through Audio File Services and converted (or decoded) to 32-bit float by an
/// AudioConverter, as a program on Apple platforms would measure them.
///
/// One path for every file: linear PCM of any layout, µ-law and A-law, what libsndfile decodes
/// (FLAC, Vorbis, MP3: the file presents them as PCM) and compressed packets (AAC, ALAC...),
/// whose encoder priming and last-packet remainder are left out.
final class FilePeaks {
    private let file: AudioFileID
    private let format: AudioStreamBasicDescription
    private let packetCount: Int64
    /// Bytes of the largest packet, and how many packets one read takes.
    private let packetBytes: Int
    private let batch: Int
    /// What the converter's input proc hands out; valid until its next call (Apple's contract).
    private let buffer: UnsafeMutableRawPointer
    private let descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>
    private var nextPacket: Int64 = 0
    /// The first failure of a read, reported instead of the converter's result.
    fileprivate var failure: InfoFailure?

    private init(_ file: AudioFileID, format: AudioStreamBasicDescription, packetCount: Int64, maximumPacketSize: Int) {
        self.file = file
        self.format = format
        self.packetCount = packetCount
        packetBytes = max(maximumPacketSize, 1)
        batch = format.mBytesPerPacket > 0 ? max(1, 65536 / packetBytes) : 64
        buffer = .allocate(byteCount: packetBytes * batch, alignment: 16)
        descriptions = .allocate(capacity: batch)
    }

    deinit {
        buffer.deallocate()
        descriptions.deallocate()
    }

    /// The largest absolute sample per channel (1.0 is full scale) of frames
    /// `skip ..< skip + frames` of the decoded audio (all frames from `skip` when nil).
    /// - Parameters:
    ///   - cookie: the file's magic cookie, for the decoder of compressed packets.
    /// - Throws: `InfoFailure` naming the packet that could not be read or decoded.
    static func measure(_ file: AudioFileID, format: AudioStreamBasicDescription, packetCount: Int64, maximumPacketSize: Int,
                        cookie: [UInt8], skip: Int64 = 0, frames: Int64? = nil) throws(InfoFailure) -> [Double] {
        let channels = Int(format.mChannelsPerFrame)
        var source = format
        var floats = AudioStreamBasicDescription(
            mSampleRate: format.mSampleRate, mFormatID: kAudioFormatLinearPCM,
            mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked, mBytesPerPacket: UInt32(4 * channels),
            mFramesPerPacket: 1, mBytesPerFrame: UInt32(4 * channels), mChannelsPerFrame: UInt32(channels),
            mBitsPerChannel: 32, mReserved: 0)
        var made: AudioConverterRef?
        var status = AudioConverterNew(&source, &floats, &made)
        guard status == noErr, let converter = made else {
            throw InfoFailure(kAudioFileUnsupportedDataFormatError, "cannot decode \(fourCharacterCode(format.mFormatID)) (\(fourCharacterCode(status)))")
        }
        defer { AudioConverterDispose(converter) }
        if !cookie.isEmpty {
            status = cookie.withUnsafeBytes { AudioConverterSetProperty(converter, kAudioConverterDecompressionMagicCookie, UInt32($0.count), $0.baseAddress!) }
            guard status == noErr else { throw InfoFailure(kAudioFileInvalidFileError, "its magic cookie does not decode (\(fourCharacterCode(status)))") }
        }
        let reader = FilePeaks(file, format: format, packetCount: packetCount, maximumPacketSize: maximumPacketSize)
        let user = Unmanaged.passUnretained(reader).toOpaque()
        let chunk = 4096
        var output = [Float](repeating: 0, count: chunk * channels)
        var peaks = [Double](repeating: 0, count: channels)
        var frame: Int64 = 0
        let end = frames.map { skip + $0 } ?? Int64.max
        while frame < end {
            var produced = UInt32(chunk)
            status = output.withUnsafeMutableBytes { bytes in
                var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(
                    mNumberChannels: UInt32(channels), mDataByteSize: UInt32(bytes.count), mData: bytes.baseAddress))
                return AudioConverterFillComplexBuffer(converter, readPackets, user, &produced, &list, nil)
            }
            if let failure = reader.failure { throw failure }
            guard status == noErr else {
                throw InfoFailure(kAudioFileInvalidFileError, "packet \(max(0, reader.nextPacket - 1)) does not decode (\(fourCharacterCode(status)))")
            }
            if produced == 0 { break }
            let first = max(0, skip - frame), last = min(Int64(produced), end - frame)
            if first < last {
                for index in Int(first) * channels..<Int(last) * channels {
                    peaks[index % channels] = max(peaks[index % channels], Double(abs(output[index])))
                }
            }
            frame += Int64(produced)
        }
        return peaks
    }

    /// The converter's input proc: the next packets of the file, with their descriptions.
    fileprivate func read(_ ioPackets: UnsafeMutablePointer<UInt32>, _ data: UnsafeMutablePointer<AudioBufferList>,
                          _ outDescriptions: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?) -> OSStatus {
        let count = min(Int64(ioPackets.pointee), Int64(batch), packetCount - nextPacket)
        guard count > 0 else {
            ioPackets.pointee = 0
            data.pointee.mBuffers.mDataByteSize = 0
            return noErr
        }
        var bytes = UInt32(packetBytes * batch)
        var packets = UInt32(count)
        let status = AudioFileReadPacketData(file, false, &bytes, descriptions, nextPacket, &packets, buffer)
        guard status == noErr || status == kAudioFileEndOfFileError, packets > 0 || status == kAudioFileEndOfFileError else {
            failure = InfoFailure(status, "cannot read packet \(nextPacket)")
            ioPackets.pointee = 0
            return status
        }
        nextPacket += Int64(packets)
        ioPackets.pointee = packets
        data.pointee.mNumberBuffers = 1
        data.pointee.mBuffers = AudioBuffer(mNumberChannels: format.mChannelsPerFrame, mDataByteSize: bytes, mData: buffer)
        outDescriptions?.pointee = format.mBytesPerPacket > 0 ? nil : descriptions
        return noErr
    }
}

/// AudioConverterComplexInputDataProc of `FilePeaks`.
private func readPackets(_ converter: AudioConverterRef, _ ioPackets: UnsafeMutablePointer<UInt32>,
                         _ data: UnsafeMutablePointer<AudioBufferList>,
                         _ descriptions: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                         _ user: UnsafeMutableRawPointer?) -> OSStatus {
    Unmanaged<FilePeaks>.fromOpaque(user!).takeUnretainedValue().read(ioPackets, data, descriptions)
}
