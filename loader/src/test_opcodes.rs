//! The RPC opcodes LLVM 19's GPU libc tests use to exercise the protocol
//! (`rpc_test_opcode_t`, `libc/include/llvm-libc-types/test_rpc_opcodes_t.h`),
//! served as LLVM 19's `amdhsa-loader` serves them
//! (`libc/utils/gpu/loader/Loader.h`, `register_rpc_callbacks`). Opcodes from
//! 2^15 up are outside libc's own range, so they never clash with it.

use rpc::{Packet, Port, Server};

/// `RPC_TEST_INCREMENT`: each lane's first word comes back incremented.
pub const TEST_INCREMENT: u16 = (1 << 15) + 1;
/// `RPC_TEST_INTERFACE`: a fixed exchange of sends and receives around one
/// counter, ending with a receive or a send as the device asks first.
pub const TEST_INTERFACE: u16 = (1 << 15) + 2;
/// `RPC_TEST_STREAM`: each lane's byte string (`recv_n`) is echoed back
/// (`send_n`).
pub const TEST_STREAM: u16 = (1 << 15) + 3;

/// Registers the three test opcodes on `server`.
pub fn register(server: &mut Server) {
    server.register_callback(
        TEST_INCREMENT,
        Box::new(|port| {
            port.recv_and_send(|_, p| {
                p[0] = p[0].wrapping_add(1);
                Ok(())
            })
            .map_err(|e| e.to_string())
        }),
    );
    server.register_callback(
        TEST_INTERFACE,
        Box::new(|port| interface(port).map_err(|e| e.to_string())),
    );
    server.register_callback(
        TEST_STREAM,
        Box::new(|port| {
            let data = port.recv_n("test stream").map_err(|e| e.to_string())?;
            let views: Vec<Option<&[u8]>> = data.iter().map(|d| d.as_deref()).collect();
            port.send_n(&views).map_err(|e| e.to_string())
        }),
    );
}

/// The `RPC_TEST_INTERFACE` transaction. One counter is shared by all
/// active lanes, which are visited in ascending order: a receive stores a
/// lane's first word in it, a send increments it and gives each lane the
/// new value.
fn interface(port: &mut Port<'_>) -> rpc::Result<()> {
    let mut end_with_recv = false;
    port.recv(|_, p: &mut Packet| {
        end_with_recv = p[0] != 0;
        Ok(())
    })?;
    let mut count = 0u64;
    // The order of the device's side: recv, send, recv, send, recv, recv,
    // send, send (from the host's view), then the last step.
    for receive in [
        true,
        false,
        true,
        false,
        true,
        true,
        false,
        false,
        end_with_recv,
    ] {
        if receive {
            port.recv(|_, p| {
                count = p[0];
                Ok(())
            })?;
        } else {
            port.send(|_, p| {
                count = count.wrapping_add(1);
                p[0] = count;
                Ok(())
            })?;
        }
    }
    Ok(())
}
