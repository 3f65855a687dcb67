import CAudioToolbox
import AudioCodec

// Reading: the file's packets go through the converter to the client format; the encoder's
// priming and remainder are dropped, and Seek lands on its frame exactly: decoding starts a
// few packets earlier (the decoder's overlap) and the frames before the target are discarded.

/// The priming and remainder an ExtAudioFile trims, and the valid frames between them.
struct PacketTable {
    /// The file's own values (kAudioFilePropertyPacketTableInfo), kept for the overrides.
    var file = AudioFilePacketTableInfo()
    var priming: Int64 = 0
    var remainder: Int64 = 0
    var validFrames: Int64 = 0
    /// The frames the packets decode to, priming and remainder included.
    var totalFrames: Int64 = 0

    init() {}

    init(file: AudioFilePacketTableInfo, totalFrames: Int64) {
        self.file = file
        self.totalFrames = totalFrames
        priming = Int64(max(file.mPrimingFrames, 0))
        remainder = Int64(max(file.mRemainderFrames, 0))
        validFrames = file.mNumberValidFrames > 0 ? file.mNumberValidFrames : max(totalFrames - priming - remainder, 0)
    }

    /// kExtAudioFileProperty_PacketTable set: -1 keeps the file's value, -2 keeps it if the
    /// file's values add up to its frames (else 0, or the frames left for the valid count).
    mutating func override(with info: AudioFilePacketTableInfo) throws {
        let fileAddsUp = Int64(file.mPrimingFrames) + Int64(file.mRemainderFrames) + file.mNumberValidFrames == totalFrames
        func resolve(_ value: Int32, fileValue: Int32) throws -> Int64 {
            switch value {
            case kExtAudioFilePacketTableInfoOverride_UseFileValue: Int64(fileValue)
            case kExtAudioFilePacketTableInfoOverride_UseFileValueIfValid: fileAddsUp ? Int64(fileValue) : 0
            case 0...: Int64(value)
            default: throw AudioToolboxError(kAudio_ParamError, "priming or remainder \(value)")
            }
        }
        let newPriming = try resolve(info.mPrimingFrames, fileValue: file.mPrimingFrames)
        let newRemainder = try resolve(info.mRemainderFrames, fileValue: file.mRemainderFrames)
        guard newPriming + newRemainder <= totalFrames else {
            throw AudioToolboxError(kAudio_ParamError, "\(newPriming) priming and \(newRemainder) remainder frames in \(totalFrames)")
        }
        priming = newPriming
        remainder = newRemainder
        switch info.mNumberValidFrames {
        case 1...: validFrames = min(info.mNumberValidFrames, totalFrames - priming)
        case Int64(kExtAudioFilePacketTableInfoOverride_UseFileValue) where file.mNumberValidFrames > 0:
            validFrames = min(file.mNumberValidFrames, totalFrames - priming)
        default: validFrames = totalFrames - priming - remainder
        }
    }

    var info: AudioFilePacketTableInfo {
        AudioFilePacketTableInfo(mNumberValidFrames: validFrames, mPrimingFrames: Int32(clamping: priming), mRemainderFrames: Int32(clamping: remainder))
    }
}

/// Where the converter reads the file.
struct ReadState {
    /// The next packet the input proc reads.
    var nextPacket: Int64 = 0
    /// Frames the converter gives before the one at `position`, to drop.
    var discard: Int64 = 0
    var needsReposition = true
    /// Client frames read since `position` was set.
    var clientFramesRead: Int64 = 0
    /// The result of the file read that ended the input (other than its end).
    var inputError: OSStatus = noErr
    /// The converter's result for frames it did give (a packet that did not decode, its
    /// frames silence), returned by the next Read.
    var deferredError: OSStatus = noErr
}

extension ExtAudioFileObject {
    /// Packets decoded before the one a seek lands in: the decoder's memory (AAC's overlapped
    /// transform, MP3's bit reservoir, Opus's 80 ms of pre-roll).
    private var prerollPackets: Int64 {
        switch fileFormat.mFormatID {
        case kAudioFormatMPEG4AAC, kAudioFormatMPEG4AAC_HE, kAudioFormatMPEG4AAC_HE_V2: 2
        case kAudioFormatMPEGLayer3: 3
        case kAudioFormatOpus: 4
        default: 0
        }
    }

    /// Seek: the next Read starts at `frame` (file frames after the priming).
    func seek(to frame: Int64) throws {
        guard mode == .reading else { throw AudioToolboxError(kExtAudioFileError_InvalidSeek, "the file is open for writing") }
        guard frame >= 0, frame <= packetTable.validFrames else {
            throw AudioToolboxError(kExtAudioFileError_InvalidSeek, "frame \(frame) is outside 0...\(packetTable.validFrames)")
        }
        position = frame
        readState.clientFramesRead = 0
        readState.needsReposition = true
    }

    /// Points the input at the packet holding `position` (less the pre-roll) and resets the converter.
    private func reposition(_ converter: AudioConverterRef) throws {
        let absolute = position + packetTable.priming
        let framesPerPacket = Int64(fileFormat.mFramesPerPacket)
        if isPCMFile {
            readState.nextPacket = absolute
            readState.discard = 0
        } else if framesPerPacket > 0 {
            let start = max(0, absolute / framesPerPacket - prerollPackets)
            readState.nextPacket = start
            readState.discard = scaled(absolute - start * framesPerPacket, toClient: true)
        } else {
            readState.nextPacket = 0
            readState.discard = scaled(absolute, toClient: true)
        }
        try check(audioConverterReset(converter), "resetting the converter")
        readState.inputError = noErr
        readState.needsReposition = false
    }

    /// ExtAudioFileRead: up to `frames` client frames into `list`; returns the frames read (0 at the end).
    func read(_ frames: Int, into list: UnsafeMutablePointer<AudioBufferList>) throws -> Int {
        guard mode == .reading else { throw AudioToolboxError(kExtAudioFileError_InvalidOperationOrder, "the file is open for writing") }
        let converter = try readyConverter()
        guard let client = clientFormat else { throw AudioToolboxError(kExtAudioFileError_InvalidOperationOrder, "no client format") }
        if readState.deferredError != noErr {
            let error = readState.deferredError
            readState.deferredError = noErr
            throw AudioToolboxError(error, "a packet of the frames read last did not decode")
        }
        let capacity = try ClientBuffers.frameCapacity(of: list, format: client)
        if readState.needsReposition { try reposition(converter) }
        let frameBytes = Int(converterClientFormat!.mBytesPerFrame)
        while readState.discard > 0 {
            let chunk = Int(min(readState.discard, Int64(max(ioBufferBytes / frameBytes, 1024))))
            scratch.reserve(chunk * frameBytes)
            let got = try fill(converter, frames: chunk, into: scratch.pointer)
            if got == 0 { break }
            readState.discard -= Int64(got)
        }
        let left = scaled(packetTable.validFrames - position, toClient: true) - readState.clientFramesRead
        let want = Int(min(Int64(min(frames, capacity)), max(left, 0)))
        var done = 0
        let interleaved = !client.isNonInterleaved
        while done < want {
            let got: Int
            if interleaved, let data = list.pointee.mBuffers.mData {
                got = try fill(converter, frames: want - done, into: data + done * frameBytes)
            } else {
                let chunk = min(want - done, max(ioBufferBytes / frameBytes, 1024))
                scratch.reserve(chunk * frameBytes)
                got = try fill(converter, frames: chunk, into: scratch.pointer)
                ClientBuffers.deinterleave(scratch.pointer, frames: got, into: list, at: done, format: client)
            }
            if got == 0 { break }
            done += got
        }
        ClientBuffers.setByteSizes(of: list, frames: done, format: client)
        readState.clientFramesRead += Int64(done)
        if done == 0, readState.inputError != noErr {
            throw AudioToolboxError(readState.inputError, "reading the file's packets")
        }
        return done
    }

    /// One FillComplexBuffer call: up to `frames` interleaved client frames at `data`.
    private func fill(_ converter: AudioConverterRef, frames: Int, into data: UnsafeMutableRawPointer) throws -> Int {
        let frameBytes = UInt32(converterClientFormat!.mBytesPerFrame)
        var packets = UInt32(clamping: frames)
        var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: clientFormat!.mChannelsPerFrame,
                                                                            mDataByteSize: UInt32(clamping: Int(packets) * Int(frameBytes)), mData: data))
        let status = audioConverterFillComplexBuffer(converter, extAudioFileReadInput, Unmanaged.passUnretained(self).toOpaque(),
                                                     &packets, &list, nil)
        if status != noErr {
            if packets == 0 { throw AudioToolboxError(status, "converting the file's data") }
            if readState.deferredError == noErr { readState.deferredError = status }
        }
        return Int(packets)
    }

    /// The input proc's work: the next packets of the file, with their descriptions.
    fileprivate func supplyPackets(_ ioPackets: UnsafeMutablePointer<UInt32>, _ ioData: UnsafeMutablePointer<AudioBufferList>,
                                   _ outDescriptions: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?) -> OSStatus {
        guard let file, readState.inputError == noErr else { ioPackets.pointee = 0; return noErr }
        let packetBytes = isPCMFile ? Int(fileFormat.mBytesPerPacket) : max(fileMaxPacketSize, 1)
        io.reserve(max(ioBufferBytes, packetBytes))
        var packets = UInt32(clamping: min(Int(ioPackets.pointee), max(io.capacity / max(packetBytes, 1), 1), isPCMFile ? Int.max : descriptionCapacity))
        var bytes = UInt32(clamping: io.capacity)
        let status = audioFileReadPacketData(file, 0, &bytes, isPCMFile ? nil : descriptions, readState.nextPacket, &packets, io.pointer)
        if status != noErr, status != kAudioFileEndOfFileError {
            readState.inputError = status
            packets = 0
        }
        readState.nextPacket += Int64(packets)
        ioPackets.pointee = packets
        ioData.pointee.mNumberBuffers = 1
        ioData.pointee.mBuffers = AudioBuffer(mNumberChannels: fileFormat.mChannelsPerFrame, mDataByteSize: packets == 0 ? 0 : bytes, mData: io.pointer)
        outDescriptions?.pointee = isPCMFile ? nil : descriptions
        return noErr
    }
}

/// The converter's input proc for reading: `inUserData` is the ExtAudioFileObject.
private func extAudioFileReadInput(_ converter: AudioConverterRef, _ ioPackets: UnsafeMutablePointer<UInt32>,
                                   _ ioData: UnsafeMutablePointer<AudioBufferList>,
                                   _ outDescriptions: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                                   _ user: UnsafeMutableRawPointer?) -> OSStatus {
    guard let user else { return kAudio_ParamError }
    return Unmanaged<ExtAudioFileObject>.fromOpaque(user).takeUnretainedValue().supplyPackets(ioPackets, ioData, outDescriptions)
}
