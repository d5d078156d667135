//! With the `ndpi` feature: compiles the shim over Debian's libndpi and links libndpi
//! dynamically (it is LGPL-3.0). Without it, nothing.

fn main() {
    println!("cargo:rerun-if-changed=ndpi/shim.c");
    #[cfg(feature = "ndpi")]
    {
        cc::Build::new().file("ndpi/shim.c").warnings(false).compile("rampart_ndpi_shim");
        println!("cargo:rustc-link-lib=dylib=ndpi");
    }
}
