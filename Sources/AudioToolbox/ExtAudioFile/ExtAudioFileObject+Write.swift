import CAudioToolbox
import AudioCodec

// Writing: the client's frames go through the converter (an encoder for compressed files) to
// packets written with AudioFileWritePackets. Before the first packet the file gets the
// encoder's magic cookie and priming; at Dispose the encoder is drained and the packet table
// (priming, valid frames, remainder) is written, so readers trim the encoder's padding.

/// Where the converter writes the file.
struct WriteState {
    var packetsWritten: Int64 = 0
    /// Client frames taken by Write (the valid frames of the file).
    var framesTaken: Int64 = 0
    /// The client's frames not yet given to the converter (during one Write).
    var pending: UnsafeRawPointer?
    var pendingFrames = 0
    var draining = false
    var primingFrames: Int64 = 0
    var started = false
}

/// The input proc's answer when a Write's frames are all taken: not the end of the stream.
let extAudioFileInputTaken: OSStatus = 0x6A717764  // 'jqwd', private to ExtAudioFile

extension ExtAudioFileObject {
    /// ExtAudioFileWrite: `frames` client frames from `list`.
    func write(_ frames: Int, from list: UnsafePointer<AudioBufferList>) throws {
        guard mode == .writing else { throw AudioToolboxError(kExtAudioFileError_InvalidOperationOrder, "the file is open for reading") }
        try settleAsyncWrites()
        let converter = try readyConverter()
        guard let client = clientFormat else { throw AudioToolboxError(kExtAudioFileError_InvalidOperationOrder, "no client format") }
        guard frames > 0 else { return }
        guard try ClientBuffers.frameCapacity(of: list, format: client) >= frames else {
            throw AudioToolboxError(kAudio_ParamError, "the buffers hold fewer than \(frames) frames")
        }
        if !writeState.started { try startWriting(converter) }
        let frameBytes = Int(converterClientFormat!.mBytesPerFrame)
        if client.isNonInterleaved {
            let chunk = max(ioBufferBytes / frameBytes, 1024)
            var done = 0
            while done < frames {
                let n = min(chunk, frames - done)
                scratch.reserve(n * frameBytes)
                ClientBuffers.interleave(list, at: done, frames: n, into: scratch.pointer, format: client)
                try convert(converter, UnsafeRawPointer(scratch.pointer), frames: n)
                done += n
            }
        } else {
            guard let data = list.pointee.mBuffers.mData else { throw AudioToolboxError(kAudio_ParamError, "mData is NULL") }
            try convert(converter, UnsafeRawPointer(data), frames: frames)
        }
        writeState.framesTaken += Int64(frames)
    }

    /// Gives the converter `frames` interleaved frames and writes every packet it makes.
    private func convert(_ converter: AudioConverterRef, _ data: UnsafeRawPointer, frames: Int) throws {
        writeState.pending = data
        writeState.pendingFrames = frames
        defer { writeState.pending = nil; writeState.pendingFrames = 0 }
        while true {
            let (status, packets) = try pump(converter)
            if status == extAudioFileInputTaken { return }
            try check(status, "converting the client's frames")
            if packets == 0, writeState.pendingFrames == 0 { return }
        }
    }

    /// One FillComplexBuffer call into the output buffer, and the file write of its packets.
    private func pump(_ converter: AudioConverterRef) throws -> (OSStatus, Int) {
        guard let file else { throw AudioToolboxError(kExtAudioFileError_InvalidOperationOrder, "no file") }
        let packetBytes = isPCMFile ? Int(fileFormat.mBytesPerPacket) : max(maximumOutputPacketSize(converter), 1)
        io.reserve(max(ioBufferBytes, packetBytes))
        var packets = UInt32(clamping: min(io.capacity / packetBytes, isPCMFile ? Int.max : descriptionCapacity))
        var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: fileFormat.mChannelsPerFrame,
                                                                            mDataByteSize: UInt32(clamping: io.capacity), mData: io.pointer))
        let status = audioConverterFillComplexBuffer(converter, extAudioFileWriteInput, Unmanaged.passUnretained(self).toOpaque(),
                                                     &packets, &list, isPCMFile ? nil : descriptions)
        if packets > 0 {
            var written = packets
            try check(audioFileWritePackets(file, 0, list.mBuffers.mDataByteSize, isPCMFile ? nil : descriptions,
                                            writeState.packetsWritten, &written, io.pointer), "writing packets to the file")
            writeState.packetsWritten += Int64(written)
        }
        return (status, Int(packets))
    }

    private func maximumOutputPacketSize(_ converter: AudioConverterRef) -> Int {
        var size: UInt32 = 0
        var bytes = UInt32(4)
        _ = audioConverterGetProperty(converter, kAudioConverterPropertyMaximumOutputPacketSize, &bytes, &size)
        return Int(size)
    }

    /// Before the first packet: the encoder's cookie and priming go to the file (an MPEG-4
    /// file takes them only then).
    private func startWriting(_ converter: AudioConverterRef) throws {
        writeState.started = true
        guard !isPCMFile, let file else { return }
        var size: UInt32 = 0
        var writable = false
        if audioConverterGetPropertyInfo(converter, kAudioConverterCompressionMagicCookie, &size, &writable) == noErr, size > 0 {
            var cookie = [UInt8](repeating: 0, count: Int(size))
            try check(cookie.withUnsafeMutableBytes { audioConverterGetProperty(converter, kAudioConverterCompressionMagicCookie, &size, $0.baseAddress) },
                      "the encoder's magic cookie")
            try check(cookie.withUnsafeBytes { audioFileSetProperty(file, kAudioFilePropertyMagicCookieData, size, $0.baseAddress) },
                      "the file's magic cookie")
        }
        var prime = AudioConverterPrimeInfo()
        var primeSize = UInt32(MemoryLayout<AudioConverterPrimeInfo>.size)
        if audioConverterGetProperty(converter, kAudioConverterPrimeInfo, &primeSize, &prime) == noErr {
            writeState.primingFrames = Int64(prime.leadingFrames)
        }
        try setFilePacketTable(file, AudioFilePacketTableInfo(mNumberValidFrames: 0, mPrimingFrames: Int32(clamping: writeState.primingFrames),
                                                              mRemainderFrames: 0))
    }

    private func setFilePacketTable(_ file: AudioFileID, _ info: AudioFilePacketTableInfo) throws {
        var info = info
        try check(audioFileSetProperty(file, kAudioFilePropertyPacketTableInfo, UInt32(MemoryLayout<AudioFilePacketTableInfo>.size), &info),
                  "the file's packet table")
    }

    /// Dispose's part: drains the encoder and records priming, valid frames and remainder.
    func finishWriting() throws {
        if let asyncWriter {
            self.asyncWriter = nil
            try check(asyncWriter.stop(), "an earlier ExtAudioFileWriteAsync")
        }
        guard let converter, writeState.started, let file else { return }
        writeState.draining = true
        while true {
            let (status, packets) = try pump(converter)
            try check(status, "draining the encoder")
            if packets == 0 { break }
        }
        guard !isPCMFile else { return }
        // Whole packets, as the file's packet index counts them (and AAC's decoder gives a whole
        // packet's frames for the encoder's short last one).
        // The valid frames are file frames: the client's scaled by the sample rates when the
        // converter resamples (priming and the packets' frames are file frames already).
        let framesPerPacket = Int64(fileFormat.mFramesPerPacket)
        let total = writeState.packetsWritten * framesPerPacket
        let valid = min(validFileFrames, max(total - writeState.primingFrames, 0))
        let remainder = max(total - writeState.primingFrames - valid, 0)
        try setFilePacketTable(file, AudioFilePacketTableInfo(mNumberValidFrames: valid,
                                                              mPrimingFrames: Int32(clamping: writeState.primingFrames),
                                                              mRemainderFrames: Int32(clamping: remainder)))
    }

    /// The client frames written so far in file frames (N·file rate/client rate, rounded).
    var validFileFrames: Int64 { scaled(writeState.framesTaken, toClient: false) }

    /// ExtAudioFileWriteAsync: (0, NULL) makes the ring and the writer thread (not realtime);
    /// then the frames are copied into the ring (realtime-safe) and written on that thread.
    /// Returns a result code rather than throwing: nothing on the realtime path allocates.
    func writeAsync(_ frames: Int, from list: UnsafePointer<AudioBufferList>?) -> OSStatus {
        if frames > 0, list == nil { return kAudio_ParamError }
        if asyncWriter == nil {
            let status = withStatus { try startAsyncWrites() }
            guard status == noErr else { return status }
        }
        guard let asyncWriter, let client = clientFormat else { return kExtAudioFileError_InvalidOperationOrder }
        guard frames > 0 else { return asyncWriter.takeError() }
        guard let list, ClientBuffers.holds(list, frames: frames, format: client) else { return kAudio_ParamError }
        return asyncWriter.enqueue(frames, from: list)
    }

    /// The priming call's work: the ring and writer thread, once the client format is known.
    private func startAsyncWrites() throws {
        guard mode == .writing else { throw AudioToolboxError(kExtAudioFileError_InvalidOperationOrder, "the file is open for reading") }
        let converter = try readyConverter()
        guard let client = clientFormat, let interleaved = converterClientFormat else {
            throw AudioToolboxError(kExtAudioFileError_InvalidOperationOrder, "no client format")
        }
        if !writeState.started { try startWriting(converter) }
        asyncWriter = AsyncWriter(client: client, frameBytes: Int(interleaved.mBytesPerFrame)) { [unowned self] data, frames in
            withStatus { try self.writeInterleaved(data, frames: frames) }
        }
    }

    /// Before a synchronous call that touches the writing state: the writer thread finishes
    /// what the ring holds (and its error is thrown). The ring stays for later async writes.
    func settleAsyncWrites() throws {
        guard let asyncWriter else { return }
        asyncWriter.drain()
        try check(asyncWriter.takeError(), "an earlier ExtAudioFileWriteAsync")
    }

    /// `frames` interleaved client frames at `data`, converted and written (the writer thread's work).
    private func writeInterleaved(_ data: UnsafeRawPointer, frames: Int) throws {
        let converter = try readyConverter()
        try convert(converter, data, frames: frames)
        writeState.framesTaken += Int64(frames)
    }

    /// The input proc's work: the rest of the Write's frames, then 'taken' (or the end when draining).
    fileprivate func supplyFrames(_ ioPackets: UnsafeMutablePointer<UInt32>, _ ioData: UnsafeMutablePointer<AudioBufferList>) -> OSStatus {
        let frameBytes = Int(converterClientFormat?.mBytesPerFrame ?? 1)
        guard let pending = writeState.pending, writeState.pendingFrames > 0 else {
            ioPackets.pointee = 0
            ioData.pointee.mBuffers.mDataByteSize = 0
            return writeState.draining ? noErr : extAudioFileInputTaken
        }
        let n = min(Int(ioPackets.pointee), writeState.pendingFrames)
        ioPackets.pointee = UInt32(n)
        ioData.pointee.mNumberBuffers = 1
        ioData.pointee.mBuffers = AudioBuffer(mNumberChannels: clientFormat?.mChannelsPerFrame ?? 1, mDataByteSize: UInt32(n * frameBytes),
                                              mData: UnsafeMutableRawPointer(mutating: pending))
        writeState.pending = pending + n * frameBytes
        writeState.pendingFrames -= n
        return noErr
    }
}

/// The converter's input proc for writing: `inUserData` is the ExtAudioFileObject.
private func extAudioFileWriteInput(_ converter: AudioConverterRef, _ ioPackets: UnsafeMutablePointer<UInt32>,
                                    _ ioData: UnsafeMutablePointer<AudioBufferList>,
                                    _ outDescriptions: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                                    _ user: UnsafeMutableRawPointer?) -> OSStatus {
    guard let user else { return kAudio_ParamError }
    outDescriptions?.pointee = nil
    return Unmanaged<ExtAudioFileObject>.fromOpaque(user).takeUnretainedValue().supplyFrames(ioPackets, ioData)
}
