import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// The built page ships inside the Python package (think/web/dist), so `pip install` needs no Node.
const outDir = fileURLToPath(new URL("../think/web/dist", import.meta.url));

// `npm run dev` proxies the server's endpoints to a running `think serve` (THINK_DEV_SERVER).
const server = process.env.THINK_DEV_SERVER ?? "http://127.0.0.1:8000";

export default defineConfig({
  plugins: [react()],
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
