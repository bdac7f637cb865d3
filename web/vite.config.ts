import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import react from "@vitejs/plugin-react";
import { defineConfig, type Plugin } from "vite";

// The built page ships inside the Python package (think/web/dist), so `pip install` needs no Node.
const outDir = fileURLToPath(new URL("../think/web/dist", import.meta.url));

// `npm run dev` proxies the server's endpoints to a running `think serve` (THINK_DEV_SERVER).
const server = process.env.THINK_DEV_SERVER ?? "http://127.0.0.1:8000";

// Text assets are stored compressed beside the originals (`.br`, `.gz`); the server sends the
// smallest one the browser accepts (think/web/__init__.py), so nothing is compressed per request.
function precompress(): Plugin {
  let built = outDir; // `vite build --outDir …` (the freshness test) writes elsewhere
  return {
    name: "think-precompress",
    apply: "build",
    configResolved(config) {
      built = config.build.outDir;
    },
    closeBundle() {
      const assets = join(built, "assets");
      for (const name of readdirSync(assets)) {
        if (!/\.(js|css|svg|json)$/.test(name)) continue;
        const data = readFileSync(join(assets, name));
        writeFileSync(join(assets, `${name}.gz`), gzipSync(data, { level: 9 }));
        writeFileSync(
          join(assets, `${name}.br`),
          brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
        );
      }
    },
  };
}

export default defineConfig({
  plugins: [react(), precompress()],
  // Relative asset URLs keep the page working when the app is mounted below a path prefix.
  base: "./",
  build: {
    outDir,
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    chunkSizeWarningLimit: 600,
  },
  server: {
    proxy: {
      "/_think": server,
      "/agents": { target: server, ws: true },
    },
  },
});
