import AudioCodec
import CAudioToolbox
import Glibc

// Reading and writing a file's packets (and bytes), and closing it, which finishes what writing began.

// MARK: - Close

extension PacketAudioFile {
    func close() throws {
        try withOpenState { state in
            defer {
                if state.fd >= 0 { Glibc.close(state.fd) }
                state.fd = -1
                state.isOpen = false
                state.mediaWriter = nil
            }
            guard state.canWrite else { return }
            if var writer = state.cafWriter {
                try writer.finish(format: state.format, index: state.index, cookie: state.cookie, channelLayout: state.channelLayout)
                state.cafWriter = writer
            }
            if let writer = state.mediaWriter {
                if !writer.hasStarted { try Self.startMediaWriter(&state, writer) }
                do {
                    try writer.finish(remainderFrames: Int64(state.index.remainderFrames))
                } catch {
                    throw AudioToolboxError(ioErr, "\(state.path): \(error)")
                }
            }
        }
    }
}

// MARK: - Packets

extension PacketAudioFile {
    func readPackets(from startPacket: Int64, count packetCount: Int, capacity: Int, into buffer: UnsafeMutableRawPointer,
                     descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) throws
        -> (packets: Int, bytes: Int, reachedEnd: Bool) {
        try withOpenState { state in
            guard state.canRead else {
                throw AudioToolboxError(kAudioFilePermissionsError,
                                        "MPEG-4 files being written are read once closed")
            }
            let entries = state.index.entries
            guard startPacket >= 0, startPacket <= Int64(entries.count) else {
                throw AudioToolboxError(kAudioFileInvalidPacketOffsetError, "packet \(startPacket) is outside 0...\(entries.count)")
            }
            let start = Int(startPacket)
            let end = min(entries.count, start + max(packetCount, 0))
            var bytes = 0
            var packet = start
            while packet < end, capacity - bytes >= Int(entries[packet].byteCount) {
                let entry = entries[packet]
                guard let data = ChunkReader(fd: state.fd).bytes(at: entry.offset, count: Int(entry.byteCount)) else {
                    throw AudioToolboxError(kAudioFileInvalidFileError, "packet \(packet) could not be read: the file is shorter than its index")
                }
                data.withUnsafeBytes { (buffer + bytes).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                descriptions?[packet - start] = AudioStreamPacketDescription(
                    mStartOffset: Int64(bytes), mVariableFramesInPacket: state.index.framesPerPacket == 0 ? entry.frameCount : 0,
                    mDataByteSize: entry.byteCount)
                bytes += Int(entry.byteCount)
                packet += 1
            }
            if packet == start, start < end {
                throw AudioToolboxError(kAudio_ParamError,
                                        "packet \(start) is \(entries[start].byteCount) bytes, the buffer \(capacity) (kAudioFilePropertyMaximumPacketSize)")
            }
            let read = packet - start
            return (read, bytes, read < packetCount && packet == entries.count)
        }
    }

    func writePackets(at startPacket: Int64, count packetCount: Int, byteCount: Int,
                      descriptions: UnsafePointer<AudioStreamPacketDescription>?, from bytes: UnsafeRawPointer) throws
        -> (packets: Int, error: Error?) {
        try withOpenState { state in
            guard state.canWrite else { throw AudioToolboxError(kAudioFilePermissionsError, "the file is not open for writing") }
            // No packets: nothing is written, as on Apple platforms, whatever the byte count and
            // descriptions (0 and NULL from a stopping recording queue's unfilled buffers, which
            // the guide's callback writes like every other).
            if packetCount == 0 {
                guard (0...Int64(state.index.entries.count)).contains(startPacket) else {
                    throw AudioToolboxError(kAudioFileInvalidPacketOffsetError,
                                            "packet \(startPacket) is past the end (\(state.index.entries.count) packets)")
                }
                return (0, nil)
            }
            guard startPacket == Int64(state.index.entries.count) else {
                throw AudioToolboxError(kAudioFileInvalidPacketOffsetError,
                                        "compressed packets are appended: the next packet is \(state.index.entries.count), not \(startPacket)")
            }
            guard packetCount >= 0 else { throw AudioToolboxError(kAudio_ParamError, "a negative packet count") }
            let packets = try Self.packets(in: byteCount, count: packetCount, descriptions: descriptions, format: state.format)
            for (number, packet) in packets.enumerated() {
                do {
                    try Self.append(&state, UnsafeRawBufferPointer(start: bytes + packet.offset, count: packet.size), frames: packet.frames)
                } catch {
                    return (number, error)
                }
            }
            return (packets.count, nil)
        }
    }

    /// The packets a write describes, checked against the bytes given.
    private static func packets(in byteCount: Int, count: Int, descriptions: UnsafePointer<AudioStreamPacketDescription>?,
                                format: AudioStreamBasicDescription) throws(AudioToolboxError) -> [(offset: Int, size: Int, frames: UInt32)] {
        if format.mBytesPerPacket > 0 {
            let size = Int(format.mBytesPerPacket)
            guard byteCount >= count * size else {
                throw AudioToolboxError(kAudio_ParamError, "\(count) packets are \(count * size) bytes, inNumBytes is \(byteCount)")
            }
            return (0..<count).map { ($0 * size, size, format.mFramesPerPacket) }
        }
        guard let descriptions else {
            throw AudioToolboxError(kAudio_ParamError, "packets of variable size need their AudioStreamPacketDescriptions")
        }
        return try (0..<count).map { number throws(AudioToolboxError) in
            let description = descriptions[number]
            let frames = format.mFramesPerPacket > 0 ? format.mFramesPerPacket : description.mVariableFramesInPacket
            guard description.mStartOffset >= 0, description.mDataByteSize > 0,
                  description.mStartOffset + Int64(description.mDataByteSize) <= Int64(byteCount)
            else {
                throw AudioToolboxError(kAudio_ParamError,
                                        "packet \(number) (\(description.mDataByteSize) bytes at \(description.mStartOffset)) is outside the \(byteCount) bytes given")
            }
            guard frames > 0 else {
                throw AudioToolboxError(kAudio_ParamError, "packet \(number) says no frames (mVariableFramesInPacket is 0)")
            }
            return (Int(description.mStartOffset), Int(description.mDataByteSize), frames)
        }
    }

    /// Appends one packet to the file.
    private static func append(_ state: inout State, _ packet: UnsafeRawBufferPointer, frames: UInt32) throws {
        var offset: Int64 = 0
        switch state.container {
        case .caf:
            guard var writer = state.cafWriter else { return }
            if !writer.hasHeader {
                try writer.writeHeader(format: state.format, cookie: state.cookie, channelLayout: state.channelLayout)
                state.dataOffset = writer.dataEnd
            }
            offset = try writer.append(packet)
            state.cafWriter = writer
        case .adts:
            let header = try adtsHeader(state, packetSize: packet.count)
            var frame = header + Array(packet)
            let start = Int64(lseek(state.fd, 0, SEEK_END))
            try frame.withUnsafeMutableBytes { try ChunkReader.writeAll(state.fd, UnsafeRawBufferPointer($0), at: start) }
            offset = start + Int64(header.count)
        case .mp3:
            throw AudioToolboxError(kAudioFilePermissionsError, "MP3 files of packets are read only")
        case .mpeg4:
            guard let writer = state.mediaWriter else { return }
            if !writer.hasStarted { try startMediaWriter(&state, writer) }
            do {
                try writer.write(packet, frames: Int64(frames))
            } catch {
                throw AudioToolboxError(ioErr, "\(state.path): \(error)")
            }
        }
        state.index.append(.init(offset: offset, byteCount: UInt32(packet.count), frameCount: frames))
    }

    /// Starts libavformat's muxer with the cookie (or one made from the data format).
    private static func startMediaWriter(_ state: inout State, _ writer: MediaFileWriter) throws {
        var extradata = state.cookie.flatMap { state.compressed.extradata(cookie: $0) }
        if extradata == nil, state.compressed == .aac {
            extradata = PacketFormat.audioSpecificConfig(sampleRate: state.format.mSampleRate, channels: Int(state.format.mChannelsPerFrame))
        }
        guard let extradata else {
            throw AudioToolboxError(kAudioFileUnsupportedDataFormatError,
                                    "set kAudioFilePropertyMagicCookieData (the encoder's cookie) before writing \(state.compressed) packets to an MPEG-4 file")
        }
        let codec = CodecFormat(formatID: state.format.mFormatID, formatFlags: state.format.mFormatFlags, sampleRate: state.format.mSampleRate,
                                channelCount: Int(state.format.mChannelsPerFrame), framesPerPacket: Int(state.format.mFramesPerPacket))
        let stream = MediaFileWriter.Stream(format: codec, extradata: extradata,
                                            bitsPerRawSample: state.compressed == .alac ? PacketFormat.alacBitDepth(cookie: extradata) ?? 16 : 0)
        do {
            try writer.start(stream, primingFrames: Int64(state.index.primingFrames))
        } catch {
            throw AudioToolboxError(kAudioFileUnsupportedDataFormatError, "libavformat cannot write this stream: \(error)")
        }
    }

    /// The 7-byte ADTS header of a packet (no CRC).
    private static func adtsHeader(_ state: State, packetSize: Int) throws(AudioToolboxError) -> [UInt8] {
        let config = state.cookie.flatMap { state.compressed.extradata(cookie: $0) }
            ?? PacketFormat.audioSpecificConfig(sampleRate: state.format.mSampleRate, channels: Int(state.format.mChannelsPerFrame))
        guard let config, config.count >= 2 else {
            throw AudioToolboxError(kAudioFileUnsupportedDataFormatError, "ADTS cannot describe AAC at \(state.format.mSampleRate) Hz")
        }
        let objectType = min(max(Int(config[0] >> 3), 1), 4)
        let rateIndex = Int(config[0] & 7) << 1 | Int(config[1] >> 7)
        let channels = Int(config[1] >> 3) & 0xF
        let length = packetSize + 7
        guard length < 1 << 13 else { throw AudioToolboxError(kAudio_ParamError, "an AAC packet of \(packetSize) bytes") }
        return [0xFF, 0xF1, UInt8((objectType - 1) << 6 | rateIndex << 2 | channels >> 2),
                UInt8((channels & 3) << 6 | length >> 11), UInt8((length >> 3) & 0xFF), UInt8((length & 7) << 5 | 0x1F), 0xFC]
    }

    // MARK: Bytes

    func readBytes(from start: Int64, count: Int, into buffer: UnsafeMutableRawPointer) throws -> (bytes: Int, reachedEnd: Bool) {
        try withOpenState { state in
            guard state.container == .caf, state.canRead else {
                throw AudioToolboxError(kAudioFileOperationNotSupportedError, "this file's packets are not contiguous: read packets")
            }
            let total = state.index.byteCount
            guard start >= 0, start <= total else { throw AudioToolboxError(kAudioFilePositionError, "byte \(start) is outside 0...\(total)") }
            let wanted = Int(min(Int64(max(count, 0)), total - start))
            guard let data = ChunkReader(fd: state.fd).bytes(at: state.dataOffset + start, count: wanted) else {
                throw AudioToolboxError(kAudioFileInvalidFileError, "the file is shorter than its data")
            }
            data.withUnsafeBytes { if $0.count > 0 { buffer.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
            return (wanted, wanted < count)
        }
    }

    func writeBytes(at start: Int64, from bytes: UnsafeRawBufferPointer) throws -> (bytes: Int, error: Error?) {
        try withOpenState { _ in
            throw AudioToolboxError(kAudioFileOperationNotSupportedError,
                                    "compressed data is written in packets: AudioFileWritePackets with their descriptions")
        }
    }
}
