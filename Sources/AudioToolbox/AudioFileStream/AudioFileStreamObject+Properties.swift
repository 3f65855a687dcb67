import CAudioToolbox

/// The properties of a stream: what its header said, and the translations between packets,
/// frames and bytes. A value the stream has not given yet is 'unk?' (ValueUnknown) before
/// the header is complete.
extension AudioFileStreamObject {
    /// The size of a property's value.
    func propertySize(_ id: AudioFileStreamPropertyID) throws(AudioToolboxError) -> Int {
        switch id {
        case kAudioFileStreamProperty_PacketToFrame, kAudioFileStreamProperty_FrameToPacket:
            return MemoryLayout<AudioFramePacketTranslation>.size
        case kAudioFileStreamProperty_PacketToByte, kAudioFileStreamProperty_ByteToPacket:
            return MemoryLayout<AudioBytePacketTranslation>.size
        default:
            return try value(of: id).count
        }
    }

    /// Copies a property's value into `buffer`; returns its size. The translations read
    /// their input from `buffer`.
    func getProperty(_ id: AudioFileStreamPropertyID, into buffer: UnsafeMutableRawPointer, capacity: Int) throws(AudioToolboxError) -> Int {
        switch id {
        case kAudioFileStreamProperty_PacketToFrame, kAudioFileStreamProperty_FrameToPacket:
            guard capacity >= MemoryLayout<AudioFramePacketTranslation>.size else { throw badSize(id) }
            var translation = buffer.loadUnaligned(as: AudioFramePacketTranslation.self)
            try translate(&translation, toFrame: id == kAudioFileStreamProperty_PacketToFrame)
            buffer.storeBytes(of: translation, as: AudioFramePacketTranslation.self)
            return MemoryLayout<AudioFramePacketTranslation>.size
        case kAudioFileStreamProperty_PacketToByte, kAudioFileStreamProperty_ByteToPacket:
            guard capacity >= MemoryLayout<AudioBytePacketTranslation>.size else { throw badSize(id) }
            var translation = buffer.loadUnaligned(as: AudioBytePacketTranslation.self)
            try translate(&translation, toByte: id == kAudioFileStreamProperty_PacketToByte)
            buffer.storeBytes(of: translation, as: AudioBytePacketTranslation.self)
            return MemoryLayout<AudioBytePacketTranslation>.size
        default:
            let bytes = try value(of: id)
            // Variable-size values (cookie, format list, layout) may be read in part; fixed ones need their size.
            let variable = [kAudioFileStreamProperty_MagicCookieData, kAudioFileStreamProperty_FormatList,
                            kAudioFileStreamProperty_ChannelLayout].contains(id)
            guard capacity >= bytes.count || (variable && capacity >= 0) else { throw badSize(id) }
            let n = min(capacity, bytes.count)
            if variable, id != kAudioFileStreamProperty_MagicCookieData, n < bytes.count { throw badSize(id) }
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: n) }
            return n
        }
    }

    private func badSize(_ id: AudioFileStreamPropertyID) -> AudioToolboxError {
        AudioToolboxError(kAudioFileStreamError_BadPropertySize, "the buffer is too small for \(fourCharacterCode(id))")
    }

    private func unknown(_ id: AudioFileStreamPropertyID) -> AudioToolboxError {
        header.ready ? AudioToolboxError(kAudioFileStreamError_UnsupportedProperty, "this stream has no \(fourCharacterCode(id))")
            : AudioToolboxError(kAudioFileStreamError_ValueUnknown, "\(fourCharacterCode(id)) is not known yet")
    }

    /// The bytes of a property's value.
    private func value(of id: AudioFileStreamPropertyID) throws(AudioToolboxError) -> [UInt8] {
        func bytes<T>(_ value: T?) throws(AudioToolboxError) -> [UInt8] {
            guard let value else { throw unknown(id) }
            return withUnsafeBytes(of: value) { Array($0) }
        }
        switch id {
        case kAudioFileStreamProperty_ReadyToProducePackets: return try bytes(UInt32(header.ready ? 1 : 0))
        case kAudioFileStreamProperty_FileFormat: return try bytes(header.fileFormat)
        case kAudioFileStreamProperty_DataFormat: return try bytes(header.dataFormat)
        case kAudioFileStreamProperty_FormatList:
            guard let format = header.dataFormat else { throw unknown(id) }
            let tag = header.channelLayout?.tag ?? ChannelLayoutValue.default(channelCount: Int(format.mChannelsPerFrame)).tag
            return try bytes(AudioFormatListItem(mASBD: format, mChannelLayoutTag: tag))
        case kAudioFileStreamProperty_MagicCookieData:
            guard let cookie = header.magicCookie, !cookie.isEmpty else { throw unknown(id) }
            return cookie
        case kAudioFileStreamProperty_AudioDataByteCount: return try bytes(header.audioDataByteCount)
        case kAudioFileStreamProperty_AudioDataPacketCount: return try bytes(header.audioDataPacketCount)
        case kAudioFileStreamProperty_MaximumPacketSize:
            let maximum = header.maximumPacketSize ?? (header.largestDelivered > 0 ? header.largestDelivered : header.packetSizeUpperBound)
            return try bytes(maximum)
        case kAudioFileStreamProperty_PacketSizeUpperBound: return try bytes(header.packetSizeUpperBound ?? header.maximumPacketSize)
        case kAudioFileStreamProperty_DataOffset: return try bytes(header.dataOffset)
        case kAudioFileStreamProperty_ChannelLayout:
            guard let layout = header.channelLayout else { throw unknown(id) }
            var out = [UInt8](repeating: 0, count: layout.byteCount)
            out.withUnsafeMutableBytes { layout.store(into: $0.baseAddress!) }
            return out
        case kAudioFileStreamProperty_PacketTableInfo: return try bytes(header.packetTable)
        case kAudioFileStreamProperty_AverageBytesPerPacket: return try bytes(averageBytesPerPacket)
        case kAudioFileStreamProperty_BitRate: return try bytes(bitRate)
        default:
            throw AudioToolboxError(kAudioFileStreamError_UnsupportedProperty, "\(fourCharacterCode(id)) is not a property jaq's streams answer")
        }
    }

    /// Bytes per packet: constant for CBR, else the header's counts, else the packets so far.
    var averageBytesPerPacket: Double? {
        guard let format = header.dataFormat else { return nil }
        if format.mBytesPerPacket > 0 { return Double(format.mBytesPerPacket) }
        if let bytes = header.audioDataByteCount, let packets = header.audioDataPacketCount, packets > 0 {
            return Double(bytes) / Double(packets)
        }
        if header.deliveredPackets > 0 { return Double(header.deliveredBytes) / Double(header.deliveredPackets) }
        return nil
    }

    /// Bits per second: the header's, else from the average packet and its duration.
    var bitRate: UInt32? {
        if let rate = header.bitRate { return rate }
        guard let format = header.dataFormat, format.mSampleRate > 0, format.mFramesPerPacket > 0,
              let average = averageBytesPerPacket else { return nil }
        let rate = average * 8 * format.mSampleRate / Double(format.mFramesPerPacket)
        return rate.isFinite && rate >= 0 && rate < 4e9 ? UInt32(rate) : nil
    }

    private func translate(_ t: inout AudioFramePacketTranslation, toFrame: Bool) throws(AudioToolboxError) {
        guard let format = header.dataFormat else { throw unknown(kAudioFileStreamProperty_PacketToFrame) }
        if format.mFramesPerPacket > 0 {
            let per = Int64(format.mFramesPerPacket)
            if toFrame {
                let first = t.mPacket.multipliedReportingOverflow(by: per)
                let frame = first.partialValue.addingReportingOverflow(Int64(min(t.mFrameOffsetInPacket, UInt32(per - 1))))
                guard t.mPacket >= 0, !first.overflow, !frame.overflow else { throw invalidPacket(t.mPacket) }
                t.mFrame = frame.partialValue
            } else {
                guard t.mFrame >= 0 else { throw AudioToolboxError(kAudio_ParamError, "frame \(t.mFrame)") }
                t.mPacket = t.mFrame / per
                t.mFrameOffsetInPacket = UInt32(t.mFrame % per)
            }
            return
        }
        guard let starts = header.packetFrameStarts else { throw AudioToolboxError(kAudioFileStreamError_DataUnavailable, "packets of varying frames") }
        if toFrame {
            guard t.mPacket >= 0, t.mPacket < Int64(starts.count) else { throw invalidPacket(t.mPacket) }
            t.mFrame = starts[Int(t.mPacket)]
        } else {
            guard t.mFrame >= 0, let first = starts.first, t.mFrame >= first else { throw AudioToolboxError(kAudio_ParamError, "frame \(t.mFrame)") }
            let packet = lastIndex(in: starts, notAbove: t.mFrame)
            t.mPacket = Int64(packet)
            t.mFrameOffsetInPacket = UInt32(clamping: t.mFrame - starts[packet])
        }
    }

    private func translate(_ t: inout AudioBytePacketTranslation, toByte: Bool) throws(AudioToolboxError) {
        guard let format = header.dataFormat else { throw unknown(kAudioFileStreamProperty_PacketToByte) }
        t.mFlags = []
        let per = Int64(format.mBytesPerPacket)
        let offsets = header.packetOffsets
        if toByte {
            guard t.mPacket >= 0 else { throw invalidPacket(t.mPacket) }
            if per > 0 {
                guard t.mPacket <= Int64.max / per else { throw invalidPacket(t.mPacket) }
                t.mByte = t.mPacket * per
            } else if t.mPacket < Int64(offsets.count) {
                t.mByte = offsets[Int(t.mPacket)]
            } else if let average = averageBytesPerPacket {
                t.mByte = Int64(min(Double(t.mPacket) * average, 9e18))
                t.mFlags = .bytePacketTranslationFlag_IsEstimate
            } else {
                throw AudioToolboxError(kAudioFileStreamError_DataUnavailable, "no packet sizes known yet")
            }
            return
        }
        guard t.mByte >= 0 else { throw AudioToolboxError(kAudio_ParamError, "byte \(t.mByte)") }
        if per > 0 {
            t.mPacket = t.mByte / per
            t.mByteOffsetInPacket = UInt32(t.mByte % per)
        } else if let last = offsets.last, t.mByte < last + Int64(header.packetSizes.last ?? 0) {
            let packet = lastIndex(in: offsets, notAbove: t.mByte)
            t.mPacket = Int64(packet)
            t.mByteOffsetInPacket = UInt32(clamping: t.mByte - offsets[packet])
        } else if let average = averageBytesPerPacket, average > 0 {
            let packet = Double(t.mByte) / average
            t.mPacket = Int64(min(packet, 9e18))
            t.mByteOffsetInPacket = UInt32(clamping: Int64((packet - packet.rounded(.down)) * average))
            t.mFlags = .bytePacketTranslationFlag_IsEstimate
        } else {
            throw AudioToolboxError(kAudioFileStreamError_DataUnavailable, "no packet sizes known yet")
        }
    }

    private func invalidPacket(_ packet: Int64) -> AudioToolboxError {
        AudioToolboxError(kAudioFileStreamError_InvalidPacketOffset, "packet \(packet)")
    }
}

/// The index of the last element of ascending `values` that is ≤ `value` (0 when none is).
func lastIndex(in values: [Int64], notAbove value: Int64) -> Int {
    var low = 0, high = values.count
    while low < high {
        let middle = (low + high) / 2
        if values[middle] <= value { low = middle + 1 } else { high = middle }
    }
    return max(low - 1, 0)
}
