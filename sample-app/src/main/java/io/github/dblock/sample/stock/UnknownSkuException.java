package io.github.dblock.sample.stock;

/**
 * Thrown when a product has no row in the {@code stock} table.
 */
public class UnknownSkuException extends RuntimeException {

	private final String sku;

	public UnknownSkuException(String sku) {
		super("No stock row for sku '" + sku + "'");
		this.sku = sku;
	}

	/** The unknown product. */
	public String getSku() {
		return this.sku;
	}

}
